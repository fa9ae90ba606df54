"""URLs with their password masked, for any message that may quote one (`redact`).

A message that quotes what the user typed (an override, a value) may quote a URL with a user name
and password in it; specexp refuses such a URL (specexp.spec.credentials), and its messages show
it masked: `http://alice:***@host`.
"""

from __future__ import annotations

import re

USERINFO = re.compile(
    r"(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*\\?://)"
    r"(?P<user>[^/?#@\s:\\]*)(?P<password>\\?:[^/?#\s]*)?@"
)
"""`scheme://user[:password]@` (also as Hydra writes an override back: `http\\://alice\\:pw@`).
The password runs to the last `@` before the path, as a URL parser reads it."""


def redact(text: str) -> str:
    """`text` with every URL's password masked (`http://alice:***@host`), or its whole user-info
    where it has no password (`https://***@host`: a token given as the user name)."""

    def masked(match: re.Match[str]) -> str:
        scheme, user, password = match.group("scheme", "user", "password")
        if password is None:
            return f"{scheme}***@"
        colon = "\\:" if password.startswith("\\") else ":"
        return f"{scheme}{user}{colon}***@"

    return USERINFO.sub(masked, text)
