"""Secrets a judge must never see, and a normal diff that must come through untouched: shared
by the redaction tests and the packet tests (built by concatenation, so this file does not
itself look like a leaked token)."""

from __future__ import annotations

__all__ = ["GHP", "NORMAL_DIFF", "SK", "SK_ANT"]

GHP = "ghp_" + "Ab3dEfGh1jKlMn0pQrStUvWxYz0123456789"
SK = "sk-" + "proj-9fQx2LmZr8TbW1nKc4Yd7Hs3Jg6Ve0Pa"
SK_ANT = "sk-ant-" + "api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg"

NORMAL_DIFF = """\
diff --git a/src/rolling.py b/src/rolling.py
--- a/src/rolling.py
+++ b/src/rolling.py
@@ -1,5 +1,16 @@
 from collections import deque
+import math
+
+
+def rolling_mean(values: list[float], window: int) -> list[float]:
+    \"\"\"Mean of the last `window` values; the key is the running sum.\"\"\"
+    if window <= 0:
+        raise ValueError("window must be positive")
+    out: list[float] = []
+    acc = 0.0
+    for i, v in enumerate(values):
+        acc += v
+        if i >= window:
+            acc -= values[i - window]
+        out.append(acc / min(i + 1, window))
+    return out
diff --git a/tests/test_rolling.py b/tests/test_rolling.py
--- a/tests/test_rolling.py
+++ b/tests/test_rolling.py
@@ -3,3 +3,12 @@ import pytest
+def test_tokens_and_passwords_are_words(tmp_path):
+    token = tokenize("a b")
+    max_tokens = 100
+    conn = connect(
+        password=password,
+        api_key=settings.api_key,
+    )
+    data = {"token": self.token, "secret": secret}
+    assert token == ["a", "b"] and check(password="", token=None)
+    api_key: str | None = None
"""
