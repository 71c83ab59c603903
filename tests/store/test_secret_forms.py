"""Issue 31: the secret forms the second pass still stored, each redacted whole, and what sits around
each kept byte-exact; ordinary output (digests, listings, `docker run -u 1000:1000`) untouched."""

from __future__ import annotations

import base64
import hashlib
import json

import pytest

from capsule.store import redact

SAK = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY"
GHP = "ghp_R8xW2pLq9ZtY4vN6mK3sJ7dF1gH5aC0eB2uX"
STRIPE = "sk_live_51HqLyjWDarjtT1zdp7dcXYZabcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUV"
JWT_SIG = "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
JWT = f"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ.{JWT_SIG}"
PEM1 = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj"
PEM2 = "MzEfYyjiWA4R4/M2bS1GB4t7NXp98C3SC6dVMvDuictGeurT8jNbvJZHtCSuYEvu"
DOCKER = base64.b64encode(b"bob:s3cretPassw0rd!").decode()
B64 = base64.b64encode(f"AWS_SECRET_ACCESS_KEY={SAK}".encode()).decode()

FORMS = {
    "sts-assume-role": (json.dumps({"Credentials": {"AccessKeyId": "ASIAQWERTYUIOPASDFGH", "SecretAccessKey": SAK,
                                                    "SessionToken": "FwoGZXIvYXdzEBYaDHk2m" + "Q7x" * 20,
                                                    "Expiration": "2026-12-02T18:00:00Z"}}, indent=4),
                        [SAK, "ASIAQWERTYUIOPASDFGH", "Q7xQ7xQ7x"], ["Expiration", "2026-12-02T18:00:00Z"]),
    "iam-create-access-key": ('{"AccessKey": {"UserName": "bob", "AccessKeyId": "AKIAIOSFODNN7REALKEY", '
                              f'"Status": "Active", "SecretAccessKey": "{SAK}"}}}}', [SAK, "AKIAIOSFODNN7REALKEY"],
                              ['"UserName": "bob"']),
    "stripe-whole-key": (f"charge with {STRIPE} done", [STRIPE[:24], STRIPE[24:]], ["charge with ", " done"]),
    "jwt-signature": (f"Authorization token {JWT} end", [JWT_SIG, JWT[:30]], [" end"]),
    "bare-akia": ("key id AKIAIOSFODNN7REALKEY in use", ["AKIAIOSFODNN7REALKEY"], [" in use"]),
    "pem-line-alone": (f"log: {PEM1}\n{PEM2}\nnext line", [PEM1, PEM2], ["log: ", "\nnext line"]),
    "key-split-over-lines": (f"GITHUB_TOKEN={GHP[:20]}\n{GHP[20:]}\nok\n", [GHP[:20], GHP[20:]], ["\nok\n"]),
    "grep-color-escapes": (f"x.env:1:token \x1b[01;31m\x1b[K{GHP[:14]}\x1b[m\x1b[K{GHP[14:]}\n", [GHP[14:], GHP[:14]],
                           ["x.env:1:token "]),
    "base64-key": (f"data {B64} x", [B64, B64[20:60]], ["data ", " x"]),
    "docker-config-auth": ('{\n\t"auths": {\n\t\t"https://index.docker.io/v1/": {\n\t\t\t"auth": "%s"\n\t\t}\n\t}\n}'
                           % DOCKER, [DOCKER], ["https://index.docker.io/v1/"]),
    "curl-u": ("curl -u admin:Sup3rS3cret! https://api.example.com/x", ["Sup3rS3cret!"], ["curl -u admin:"]),
    "curl-user": ("curl -s --user admin:Sup3rS3cret! https://api.example.com/x", ["Sup3rS3cret!"], ["--user admin:"]),
    "mysql-p": ("mysql -h db -u root -pS3cr3tPw0rd mydb", ["S3cr3tPw0rd"], ["mysql -h db -u root -p", " mydb"]),
}


@pytest.mark.parametrize("name", sorted(FORMS))
def test_each_form_is_redacted_whole_and_its_surroundings_kept(name):
    text, secrets, kept = FORMS[name]
    out, n = redact.redact_text(text)
    assert n >= 1 and "[capsule redacted: " in out
    for s in secrets:
        assert s not in out, (name, s, out)
    for k in kept:
        assert k in out, (name, k, out)
    assert redact.redact_text(out)[0] == out            # a marker is not redacted twice; deterministic


def test_ordinary_output_is_not_mistaken_for_a_secret():
    digest = hashlib.sha256(b"x").hexdigest()
    text = "\n".join([digest, digest.upper(), "docker run -u 1000:1000 capsule:dev", "sort -u names.txt",
                      "git log -p -n 3", "QUJD", "mysqldump --single-transaction db > db.sql",
                      "-rw-r--r-- 1 dev dev 4096 Jan  1 10:00 src/auth/handlers.py",
                      "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="])
    assert redact.redact_text(text) == (text, 0)
