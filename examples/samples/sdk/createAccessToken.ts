import { createPaymentClient } from '@payment-service/client';

const pay = createPaymentClient({
  baseUrl: process.env.BASE_URL!,
  clientId: process.env.CLIENT_ID!,
  clientSecret: process.env.CLIENT_SECRET!,
});

// The client fetches, reuses and renews tokens by itself; this is for a request made without it.
const token = await pay.getAccessToken();
console.log(token);
