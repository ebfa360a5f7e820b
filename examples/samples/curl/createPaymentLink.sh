curl -s --fail-with-body -X POST "$BASE_URL/api/payment-links" \
  -H "Authorization: Bearer $TOKEN" \
  -H 'Content-Type: application/json' \
  -H 'Idempotency-Key: rent-2026-06' \
  -d '{
    "amount": { "total": 120 },
    "creditorReference": { "reference": "RENT-JUNE" },
    "checkoutMethod": "open_banking",
    "redirectUrl": "https://shop.example.com/paid",
    "webhookUrl": "https://shop.example.com/webhooks",
    "foreignTransactionId": "rent-2026-06"
  }'
