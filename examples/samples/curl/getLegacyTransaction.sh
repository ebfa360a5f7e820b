curl -s --fail-with-body "$BASE_URL/api/transaction/$TRANSACTION_ID" \
  -H "Authorization: Bearer $TOKEN"
