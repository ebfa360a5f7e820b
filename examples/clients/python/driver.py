"""The driver of payment_client.py for `payment-conformance client`: one JSON operation per
line in, one JSON outcome per line out (conformance/README.md, "Checking a client")."""

import json
import os
import sys

from payment_client import PaymentClient, PaymentError, SignatureError, verify_webhook

env = os.environ
client = PaymentClient(env["PAYMENT_BASE_URL"], env["PAYMENT_CLIENT_ID"], env["PAYMENT_CLIENT_SECRET"],
                       timeout_s=int(env.get("PAYMENT_REQUEST_TIMEOUT_MS", "30000")) / 1000)
operations = {
    "token": lambda o: {"accessToken": client.access_token()},
    "createSession": lambda o: client.create_session(o["body"]),
    "readSession": lambda o: client.read_session(o["sessionId"]),
    "confirmPayment": lambda o: client.confirm_payment(o["sessionId"]),
    "confirmRedirect": lambda o: client.confirm_redirect(o["url"]),
    "createLink": lambda o: client.create_link(o["body"]),
    "readLink": lambda o: client.read_link(o["linkId"]),
    "verifyWebhook": lambda o: verify_webhook(o["body"].encode(), o["headers"].get("service-signature"),
                                              env["PAYMENT_WEBHOOK_SECRET"]),
}

for line in sys.stdin:
    operation = json.loads(line)
    run = operations.get(operation["op"])
    try:
        outcome = {"ok": True, "value": run(operation)} if run else {"unsupported": True}
    except PaymentError as error:
        outcome = {"ok": False, "error": {"code": error.code, "status": error.status,
                                          "retryable": error.retryable, "message": str(error)}}
    except SignatureError as error:
        outcome = {"ok": False, "error": {"code": None, "status": None, "retryable": False, "message": str(error)}}
    print(json.dumps({"id": operation["id"], **outcome}), flush=True)
