curl -s --fail-with-body "$BASE_URL/api/payment-links/$LINK_ID" \
  -H "Authorization: Bearer $TOKEN"
