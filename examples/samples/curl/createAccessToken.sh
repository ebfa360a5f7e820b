curl -s --fail-with-body -X POST "$BASE_URL/api/token" \
  --data-urlencode "clientId=$CLIENT_ID" --data-urlencode "clientSecret=$CLIENT_SECRET"
