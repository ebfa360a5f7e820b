"""A client of the payment service in Python's standard library alone (urllib, json, hmac).

It does what the service document asks of a client, in ways of its own: a token reused
until a minute before it expires and renewed once on token_expired; a key on every create
(32 hex digits), the same across its retries; a 5xx, a reset or a timeout retried up to
three times, waiting 0.2 s, 0.6 s, 1.8 s (and a little more, at random); a 429 waited out
as its Retry-After asks; other refusals reported at once; unknown statuses, codes and
events handed back as they are; webhooks verified before they are read.
"""

import hashlib
import hmac
import http.client
import json
import random
import re
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid

TOKEN_LIFETIME_S = 300  # Authentication 4: five minutes, whatever expiresIn says in words
SIGNATURE_TOLERANCE_S = 300  # Receiver verification 4
CONFIGURATION_CODES = {
    "card_not_enabled",
    "open_banking_not_enabled",
    "settlement_account_missing",
    "open_banking_currency_unsupported",
}


class PaymentError(Exception):
    """A request the service refused, or that got no answer in the end."""

    def __init__(self, message, code=None, status=None, retryable=False):
        super().__init__(message)
        self.code, self.status, self.retryable = code, status, retryable


class SignatureError(Exception):
    """A delivery that must be rejected (answer 400)."""


def seconds_of(duration):
    """The seconds of a duration text ("5m", "300 seconds", "0.083 hours"); None if unreadable."""
    match = re.match(r"^\s*([\d.]+)\s*([a-z]*)", str(duration).lower())
    if not match:
        return None
    unit = {"": 1, "s": 1, "sec": 1, "second": 1, "seconds": 1, "m": 60, "min": 60, "minute": 60,
            "minutes": 60, "h": 3600, "hour": 3600, "hours": 3600}.get(match.group(2))
    return float(match.group(1)) * unit if unit else None


class PaymentClient:
    def __init__(self, base_url, client_id, client_secret, timeout_s=30.0, max_retries=3):
        self.base_url = base_url.rstrip("/")
        self.client_id, self.client_secret = client_id, client_secret
        self.timeout_s, self.max_retries = timeout_s, max_retries
        self._token, self._token_until = None, 0.0

    # ---- transport ----

    def _send(self, method, path, body=None, headers=None):
        """One attempt: (status, headers, parsed body); raises OSError when no answer came."""
        data = None if body is None else body.encode()
        request = urllib.request.Request(self.base_url + path, data=data, method=method, headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                return response.status, response.headers, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            raw = error.read()
            try:
                return error.code, error.headers, json.loads(raw or b"null")
            except ValueError:
                return error.code, error.headers, None

    def _attempts(self, method, path, body=None, headers=None):
        """Sends until an answer to act on: 5xx and no answer retried with backoff, 429 after its Retry-After."""
        for retry in range(self.max_retries + 1):
            last = retry == self.max_retries
            try:
                status, answer_headers, answer = self._send(method, path, body, headers)
            except (OSError, http.client.HTTPException, socket.timeout) as error:
                if last:
                    raise PaymentError(f"no answer: {error}", retryable=True)
                time.sleep(0.2 * 3**retry + random.uniform(0, 0.1))
                continue
            if status >= 500 and not last:
                time.sleep(0.2 * 3**retry + random.uniform(0, 0.1))
                continue
            if status == 429 and not last:
                time.sleep(float(answer_headers.get("Retry-After") or 1))
                continue
            return status, answer
        return status, answer

    @staticmethod
    def _refusal(status, answer):
        error = answer.get("error") if isinstance(answer, dict) else None
        code = error.get("code") if isinstance(error, dict) else None
        message = error.get("message") if isinstance(error, dict) else str(error)
        return PaymentError(message or f"answered {status}", code, status, retryable=status >= 500 or status == 429)

    def access_token(self):
        if self._token and time.monotonic() < self._token_until:
            return self._token
        form = urllib.parse.urlencode({"clientId": self.client_id, "clientSecret": self.client_secret})
        status, answer = self._attempts("POST", "/api/token", form,
                                        {"Content-Type": "application/x-www-form-urlencoded"})
        if status != 200:
            raise self._refusal(status, answer)
        lifetime = min(TOKEN_LIFETIME_S, seconds_of(answer.get("expiresIn")) or TOKEN_LIFETIME_S)
        self._token, self._token_until = answer["accessToken"], time.monotonic() + lifetime - 60
        return self._token

    def _call(self, method, path, payload=None, key=None):
        body = None if payload is None else json.dumps(payload)
        for renewed in (False, True):
            headers = {"Authorization": "Bearer " + self.access_token()}
            if body is not None:
                headers["Content-Type"] = "application/json"
            if key:
                headers["Idempotency-Key"] = key
            status, answer = self._attempts(method, path, body, headers)
            if status == 200:
                return answer
            error = self._refusal(status, answer)
            # Authentication 5: a new token and the request once more; never for another 401.
            if error.code == "token_expired" and not renewed:
                self._token = None
                continue
            raise error

    # ---- the operations ----

    def create_session(self, payload):
        return self._call("POST", "/api/checkout-sessions", payload, key=uuid.uuid4().hex)

    def read_session(self, session_id):
        return self._call("GET", "/api/checkout-sessions/" + urllib.parse.quote(session_id, safe=""))

    def create_link(self, payload):
        return self._call("POST", "/api/payment-links", payload, key=uuid.uuid4().hex)

    def read_link(self, link_id):
        return self._call("GET", "/api/payment-links/" + urllib.parse.quote(link_id, safe=""))

    def confirm_payment(self, session_id):
        """Read back: only `completed` is paid; any other status, known or not, is not."""
        status = self.read_session(session_id).get("status")
        return {"paid": status == "completed", "status": status}

    def confirm_redirect(self, url):
        """The ids in a redirect only say what to read back."""
        session_id = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query).get("checkoutSessionId", [None])[0]
        return {"paid": bool(session_id) and self.confirm_payment(session_id)["paid"]}


def verify_webhook(raw_body, header, secret, now=None):
    """The receiver's steps: parts by name, the digest over the raw bytes, constant time, age; then parse."""
    if not header:
        payload = json.loads(raw_body)
        if isinstance(payload, dict) and "event" not in payload and "transactionId" in payload:
            return {"kind": "legacy", "transactionId": payload["transactionId"]}
        raise SignatureError("no Service-Signature header")
    parts = [part.split("=", 1) for part in header.split(",") if "=" in part]
    t = next((value for name, value in parts if name.strip() == "t"), None)
    signatures = [value for name, value in parts if name.strip() == "v1"]
    if t is None or not signatures or not t.isdigit():
        raise SignatureError("t and v1 are needed")
    expected = hmac.new(secret.encode(), t.encode() + b"." + raw_body, hashlib.sha256).hexdigest()
    if not any(hmac.compare_digest(expected, candidate) for candidate in signatures):
        raise SignatureError("the signature does not match")
    if (now or time.time()) - int(t) > SIGNATURE_TOLERANCE_S:
        raise SignatureError("the signature is older than five minutes")
    event = json.loads(raw_body)
    return {"kind": "event", "event": event.get("event"), "transactionId": event.get("transactionId")}
