import { createPaymentClient } from '@payment-service/client';

const pay = createPaymentClient({
  baseUrl: process.env.BASE_URL!,
  clientId: process.env.CLIENT_ID!,
  clientSecret: process.env.CLIENT_SECRET!,
});

// The older creation path has no named method: the typed openapi-fetch client reaches it.
const { data, error } = await pay.api.POST('/api/transaction', {
  body: {
    amount: { total: 42 },
    creditorReference: { reference: 'LEGACY-7' },
    checkoutMethod: 'card',
    redirectUrl: 'https://shop.example.com/paid',
    foreignTransactionId: 'legacy-7',
  },
  headers: { 'Idempotency-Key': 'legacy-7' },
});
if (error) throw new Error(error.error.message);
console.log(data.transactionId);
