"""Verifying a delivery with Python's standard library: the document's receiver steps, in order."""
import hashlib
import hmac
import json
import time


def verify_delivery(raw_body: bytes, header: str | None, secret: str, now: float | None = None) -> dict:
    """Returns the parsed event; raises ValueError to reject (answer 400)."""
    # 1. Split the header on commas, each part on its first "="; take t and v1 by name.
    t, v1 = None, []
    for part in (header or "").split(","):
        name, eq, value = part.partition("=")
        if not eq:
            continue
        name, value = name.strip(), value.strip()
        if name == "t" and t is None and value.isdigit():
            t = int(value)
        elif name == "v1":
            v1.append(value)
    if t is None or not v1:
        raise ValueError("reject: no t or no v1")
    # 2. The digest over b"<t>." and the exact raw bytes, keyed with the whole whsec_ string.
    expected = hmac.new(secret.encode(), f"{t}.".encode() + raw_body, hashlib.sha256).hexdigest()
    # 3. Compared in constant time.
    if not any(hmac.compare_digest(expected, digest.lower()) for digest in v1):
        raise ValueError("reject: no v1 matches")
    # 4. Reject a t older than five minutes.
    if (time.time() if now is None else now) - t > 300:
        raise ValueError("reject: t is older than five minutes")
    # 5. Only now parse the body and act.
    return json.loads(raw_body)
