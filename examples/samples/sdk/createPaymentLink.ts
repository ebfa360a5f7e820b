import { createPaymentClient } from '@payment-service/client';

const pay = createPaymentClient({
  baseUrl: process.env.BASE_URL!,
  clientId: process.env.CLIENT_ID!,
  clientSecret: process.env.CLIENT_SECRET!,
});

const link = await pay.createPaymentLink(
  {
    amount: { total: 120 },
    creditorReference: { reference: 'RENT-JUNE' },
    checkoutMethod: 'open_banking',
    redirectUrl: 'https://shop.example.com/paid',
    webhookUrl: 'https://shop.example.com/webhooks',
    foreignTransactionId: 'rent-2026-06',
  },
  { idempotencyKey: 'rent-2026-06' },
);
console.log(link.id, link.url); // the link's id is its transaction id
