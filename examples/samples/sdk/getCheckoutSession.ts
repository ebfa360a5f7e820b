import { createPaymentClient } from '@payment-service/client';

const pay = createPaymentClient({
  baseUrl: process.env.BASE_URL!,
  clientId: process.env.CLIENT_ID!,
  clientSecret: process.env.CLIENT_SECRET!,
});

// The authoritative read: fulfil only when paid (status completed).
const { paid, status, transactionType } = await pay.confirmPayment(process.env.SESSION_ID!);
console.log(paid, status, transactionType);
