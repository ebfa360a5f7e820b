import { createPaymentClient } from '@payment-service/client';

const pay = createPaymentClient({
  baseUrl: process.env.BASE_URL!,
  clientId: process.env.CLIENT_ID!,
  clientSecret: process.env.CLIENT_SECRET!,
});

const link = await pay.getPaymentLink(process.env.LINK_ID!);
console.log(link.status);
