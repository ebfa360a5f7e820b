curl -s --fail-with-body -X POST "$BASE_URL/api/transaction" \
  -H "Authorization: Bearer $TOKEN" \
  -H 'Content-Type: application/json' \
  -H 'Idempotency-Key: legacy-7' \
  -d '{
    "amount": { "total": 42 },
    "creditorReference": { "reference": "LEGACY-7" },
    "checkoutMethod": "card",
    "redirectUrl": "https://shop.example.com/paid",
    "foreignTransactionId": "legacy-7"
  }'
