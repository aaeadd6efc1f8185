"""A test LTI 1.3 platform: what Canvas or Moodle does when a student opens the course's hub from the LMS.

It has an RSA key of its own, serves its public key as a JWKS on localhost, and launches a user the way
the LTI 1.3 / OpenID Connect third-party-initiated login goes (IMS LTI Core 1.3, section 5.1.1 and
IMS Security Framework, section 5.1.1):

1. the platform posts the login initiation (`iss`, `login_hint`, `target_link_uri`, `client_id`) to the
   tool's login URL, `/hub/lti13/oauth_login`;
2. the tool redirects the browser to the platform's authorize URL with `state` and `nonce` (and sets its
   state cookie);
3. the platform posts a signed id_token (RS256, its key's `kid` in the header) with the LTI claims and
   that nonce, and the `state`, to the tool's redirect URI, `/hub/lti13/oauth_callback`.

The hub's real LTI13Authenticator checks the token against the JWKS; nothing of the hub is mocked.
`Launch` can spoil one thing at a time (another key, audience, issuer, an expired token) and keep the
request to post it again (a replay).
"""

from __future__ import annotations

import dataclasses
import html
import http.server
import json
import threading
import time
import urllib.parse
import uuid

import jwt
import requests
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

LTI = "https://purl.imsglobal.org/spec/lti/claim/"
ROLE = {"Instructor": "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor",
        "TeachingAssistant": "http://purl.imsglobal.org/vocab/lis/v2/membership/Instructor#TeachingAssistant",
        "Learner": "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"}


def new_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


class Platform:
    """The LMS side: its issuer, the tool's client id and deployment, its key and JWKS server."""

    def __init__(self, issuer: str = "https://lms.test", client_id: str = "course-hub-client",
                 deployment_id: str = "deployment-1"):
        self.issuer, self.client_id, self.deployment_id = issuer, client_id, deployment_id
        self.key, self.kid = new_key(), "platform-key-1"
        self.hub_url = ""                    # set once the hub runs: where /launch sends a browser
        self.roles: dict[str, list[str]] = {}  # a browser launch's user id -> roles, set by /launch
        public = json.loads(RSAAlgorithm.to_jwk(self.key.public_key()))
        public.update(kid=self.kid, alg="RS256", use="sig")
        jwks = json.dumps({"keys": [public]}).encode()
        platform = self

        class Pages(http.server.BaseHTTPRequestHandler):
            """/jwks: the public key. For a browser: /launch?user=..&role=.. posts the login initiation to the
            hub, as an LMS page does when a student opens the tool; /authorize answers the hub's redirect
            with the signed id_token, posted to the hub's redirect URI by an auto-submitting form."""

            def do_GET(self):  # noqa: N802 (http.server's name)
                url = urllib.parse.urlparse(self.path)
                query = dict(urllib.parse.parse_qsl(url.query))
                if url.path == "/jwks":
                    return self.answer(jwks, "application/json")
                if url.path == "/launch":
                    platform.roles[query["user"]] = query.get("role", "Learner").split(",")
                    return self.form(platform.hub_url + "/hub/lti13/oauth_login", {
                        "iss": platform.issuer, "login_hint": query["user"], "target_link_uri": platform.hub_url + "/hub/",
                        "client_id": platform.client_id, "lti_deployment_id": platform.deployment_id})
                if url.path == "/authorize":
                    user = query["login_hint"]
                    claims = platform.claims(user, platform.roles.get(user, ["Learner"]), query["nonce"],
                                             platform.hub_url + "/hub/")
                    token = jwt.encode(claims, platform.key, algorithm="RS256", headers={"kid": platform.kid})
                    return self.form(query["redirect_uri"], {"id_token": token, "state": query["state"]})
                self.send_error(404)

            def form(self, action: str, fields: dict) -> None:
                inputs = "".join(f'<input type="hidden" name="{html.escape(name)}" value="{html.escape(value)}">'
                                 for name, value in fields.items())
                page = (f'<!doctype html><html lang="en"><title>LMS</title><body onload="document.forms[0].submit()">'
                        f'<form method="post" action="{html.escape(action)}">{inputs}</form></body></html>')
                self.answer(page.encode(), "text/html")

            def answer(self, body: bytes, kind: str) -> None:
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Pages)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def jwks_endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/jwks"

    def launch_url(self, user_id: str, roles: list[str]) -> str:
        """The page a browser opens to launch `user_id` into the hub, as from the LMS."""
        return f"http://127.0.0.1:{self.server.server_address[1]}/launch?user={user_id}&role={','.join(roles)}"

    @property
    def authorize_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/authorize"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def claims(self, user_id: str, roles: list[str], nonce: str, target: str, lifetime: int = 300) -> dict:
        now = int(time.time())
        return {
            "iss": self.issuer, "aud": self.client_id, "sub": str(uuid.uuid4()), "iat": now, "exp": now + lifetime,
            "nonce": nonce, "name": f"User {user_id}",
            LTI + "version": "1.3.0", LTI + "deployment_id": self.deployment_id,
            LTI + "message_type": "LtiResourceLinkRequest", LTI + "target_link_uri": target,
            LTI + "resource_link": {"id": "resource-link-01"},
            LTI + "context": {"id": "context-tf", "label": "TF101", "title": "TensorFlow internals"},
            LTI + "roles": [ROLE[role] for role in roles],
            LTI + "custom": {"canvas_user_id": user_id},
        }


@dataclasses.dataclass
class Launch:
    """One launch of `user_id` with `roles` into the hub at `hub_url` (through a browser session)."""

    platform: Platform
    hub_url: str
    user_id: str
    roles: list[str]
    session: requests.Session = dataclasses.field(default_factory=requests.Session)
    callback: dict | None = None
    cookies: dict | None = None

    def start(self) -> dict:
        """Steps 1 and 2: the login initiation; returns the authorize request's parameters."""
        target = self.hub_url + "/hub/"
        answer = self.session.post(self.hub_url + "/hub/lti13/oauth_login", allow_redirects=False, data={
            "iss": self.platform.issuer, "login_hint": self.user_id, "target_link_uri": target,
            "client_id": self.platform.client_id, "lti_deployment_id": self.platform.deployment_id})
        assert answer.status_code == 302, f"login initiation: {answer.status_code} {answer.text[:300]}"
        location = answer.headers["Location"]
        assert location.startswith(self.platform.authorize_url), location
        return dict(urllib.parse.parse_qsl(urllib.parse.urlparse(location).query))

    def finish(self, request: dict, *, key=None, kid: str | None = None, spoil: dict | None = None,
               lifetime: int = 300) -> requests.Response:
        """Step 3: the signed id_token posted to the hub; `spoil` overrides claims, `key` signs instead."""
        claims = self.platform.claims(self.user_id, self.roles, request["nonce"], self.hub_url + "/hub/", lifetime)
        claims.update(spoil or {})
        token = jwt.encode(claims, key or self.platform.key, algorithm="RS256",
                           headers={"kid": kid or self.platform.kid})
        self.callback = {"id_token": token, "state": request["state"]}
        self.cookies = dict(self.session.cookies)
        return self.session.post(self.hub_url + "/hub/lti13/oauth_callback", data=self.callback, allow_redirects=False)

    def replay(self) -> requests.Response:
        """The same callback posted again with the cookies it carried: a captured launch."""
        return requests.post(self.hub_url + "/hub/lti13/oauth_callback", data=self.callback, cookies=self.cookies,
                             allow_redirects=False)

    def run(self, **finish) -> requests.Response:
        return self.finish(self.start(), **finish)
