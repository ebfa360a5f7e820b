import { createPaymentClient } from '@payment-service/client';

const pay = createPaymentClient({
  baseUrl: process.env.BASE_URL!,
  clientId: process.env.CLIENT_ID!,
  clientSecret: process.env.CLIENT_SECRET!,
});

const session = await pay.createCheckoutSession(
  {
    type: 'single',
    amount: { total: 25.5 },
    creditorReference: { reference: 'ORDER-1001' },
    checkoutMethod: 'both',
    redirectUrl: 'https://shop.example.com/thanks',
    webhookUrl: 'https://shop.example.com/webhooks',
    foreignTransactionId: 'order-1001',
  },
  { idempotencyKey: 'order-1001' }, // the same key on every retry of this order
);
console.log(session.url); // send the payer here
