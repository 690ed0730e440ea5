"""A stand-in for Google's token keys: an RSA key, its self-signed certificate served as
`{kid: certificate PEM}` JSON (the shape of Google's securetoken x509 endpoint), and RS256 ID
tokens minted with that key, with the claims Firebase puts in them. The servers verify real
signatures, exactly as in production; only the key's origin differs.

Key, certificate and signatures come from the openssl command-line tool; the rest is stdlib.
"""

import base64
import json
import os
import secrets
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# Firebase ID tokens live one hour; re-mint well before that.
TOKEN_LIFETIME_SECONDS = 3600
REMINT_AFTER_SECONDS = 1800


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


class SigningKey:
    """An RSA-2048 key and its self-signed X.509 certificate, in `folder`."""

    def __init__(self, folder):
        self.key_path = os.path.join(folder, "token-key.pem")
        self.certificate_path = os.path.join(folder, "token-cert.pem")
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-sha256", "-days", "3",
             "-subj", "/CN=locify-bench-securetoken", "-keyout", self.key_path, "-out", self.certificate_path],
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=60)
        with open(self.certificate_path) as file:
            self.certificate_pem = file.read()
        # Google's kids are 40 hex digits.
        self.kid = secrets.token_hex(20)

    def sign(self, message):
        """RSASSA-PKCS1-v1_5 with SHA-256 (RS256) over `message`."""
        result = subprocess.run(
            ["openssl", "dgst", "-sha256", "-sign", self.key_path],
            input=message, check=True, capture_output=True, timeout=30)
        return result.stdout

    def certificates_json(self):
        return json.dumps({self.kid: self.certificate_pem}).encode()


class CertificateServer:
    """Serves the certificate JSON on 127.0.0.1 (any path) from a daemon thread of this process."""

    def __init__(self, key):
        body = key.certificates_json()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Type", "application/json; charset=UTF-8")
                self.send_header("Cache-Control", "public, max-age=21600, must-revalidate, no-transform")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/robot/v1/metadata/x509/securetoken@system.gserviceaccount.com"
        self._thread = threading.Thread(target=self._server.serve_forever, name="certs", daemon=True)
        self._thread.start()

    def close(self):
        self._server.shutdown()
        self._server.server_close()


class TokenMinter:
    """Mints Firebase-shaped RS256 ID tokens for `project_id`."""

    def __init__(self, key, project_id):
        self.key = key
        self.project_id = project_id

    def mint(self, uid, email=None, now=None):
        now = int(now if now is not None else time.time())
        header = {"alg": "RS256", "kid": self.key.kid, "typ": "JWT"}
        claims = {
            "iss": f"https://securetoken.google.com/{self.project_id}",
            "aud": self.project_id,
            "auth_time": now - 60,
            "user_id": uid,
            "sub": uid,
            "iat": now,
            "exp": now + TOKEN_LIFETIME_SECONDS,
        }
        if email:
            claims["email"] = email
            claims["email_verified"] = False
            claims["firebase"] = {"identities": {"email": [email]}, "sign_in_provider": "password"}
        else:
            claims["firebase"] = {"identities": {}, "sign_in_provider": "custom"}
        signing_input = (b64url(json.dumps(header, separators=(",", ":")).encode()) + "."
                         + b64url(json.dumps(claims, separators=(",", ":")).encode()))
        return signing_input + "." + b64url(self.key.sign(signing_input.encode("ascii")))


class BenchUsers:
    """The benchmark's users (uid, email, categories) and their current tokens, re-minted when
    they are half-way to expiry."""

    def __init__(self, minter, uids):
        self.minter = minter
        self.uids = list(uids)
        self.category_ids = {uid: [] for uid in self.uids}
        self._tokens = {}
        self._minted_at = 0.0

    @staticmethod
    def email(uid):
        return f"bench-{uid}@example.com"

    def tokens(self):
        if time.time() - self._minted_at > REMINT_AFTER_SECONDS:
            now = time.time()
            self._tokens = {uid: self.minter.mint(uid, self.email(uid), now) for uid in self.uids}
            self._minted_at = now
        return self._tokens

    def token(self, uid):
        return self.tokens()[uid]

    def write_file(self, path):
        """The users file of workload.lua: uid, token, category ids (comma separated)."""
        tokens = self.tokens()
        with open(path, "w") as file:
            for uid in self.uids:
                file.write(f"{uid}\t{tokens[uid]}\t{','.join(self.category_ids[uid])}\n")
        return path
