curl -s --fail-with-body "$BASE_URL/api/checkout-sessions/$SESSION_ID" \
  -H "Authorization: Bearer $TOKEN"
