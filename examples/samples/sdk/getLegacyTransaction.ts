import { createPaymentClient } from '@payment-service/client';

const pay = createPaymentClient({
  baseUrl: process.env.BASE_URL!,
  clientId: process.env.CLIENT_ID!,
  clientSecret: process.env.CLIENT_SECRET!,
});

// Retired for checkout sessions (404); clients must not rely on it.
const { data, error } = await pay.api.GET('/api/transaction/{id}', {
  params: { path: { id: process.env.TRANSACTION_ID! } },
});
if (error) throw new Error(error.error.message);
console.log(data.status);
