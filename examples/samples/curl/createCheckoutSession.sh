curl -s --fail-with-body -X POST "$BASE_URL/api/checkout-sessions" \
  -H "Authorization: Bearer $TOKEN" \
  -H 'Content-Type: application/json' \
  -H 'Idempotency-Key: order-1001' \
  -d '{
    "type": "single",
    "amount": { "total": 25.50 },
    "creditorReference": { "reference": "ORDER-1001" },
    "checkoutMethod": "both",
    "redirectUrl": "https://shop.example.com/thanks",
    "webhookUrl": "https://shop.example.com/webhooks",
    "foreignTransactionId": "order-1001"
  }'
