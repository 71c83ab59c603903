"""Generators of hostile numbers and the rate-limit headers that carry them (issue 31): what an odd or
hostile upstream can put where a number belongs. Shared by the quota and fleet tests."""

from __future__ import annotations

# Each parses (or nearly parses) as a float: nan and inf, overflow to inf (1e400, 400 digits), too big
# for a timestamp (1e30, 1e300), hugely negative, and the forms float() accepts that no server sends.
NUMBERS = ["inf", "-inf", "Infinity", "nan", "NaN", "-nan", "1e300", "-1e300", "1e400", "1e30", "-1e30",
           "9" * 400, "-" + "9" * 400, "1" + "0" * 20, "-99999999999", "1_0", " 7 ", "0x10", "", "1e-400"]


def unified(value: str) -> dict[str, str]:
    """Anthropic unified headers (a subscription) with `value` as utilization and as reset."""
    return {"anthropic-ratelimit-unified-status": "rejected",
            "anthropic-ratelimit-unified-5h-utilization": value, "anthropic-ratelimit-unified-5h-reset": "3600",
            "anthropic-ratelimit-unified-7d-utilization": "0.5", "anthropic-ratelimit-unified-7d-reset": value}


def classic(value: str) -> dict[str, str]:
    """Anthropic API-key headers: `value` as one window's limit, another's remaining, a third's reset;
    the output-tokens window is sane and must survive whatever its neighbours say."""
    p = "anthropic-ratelimit-"
    return {f"{p}requests-limit": value, f"{p}requests-remaining": "10", f"{p}requests-reset": "60",
            f"{p}tokens-limit": "1000", f"{p}tokens-remaining": value, f"{p}tokens-reset": "60",
            f"{p}input-tokens-limit": "1000", f"{p}input-tokens-remaining": "500", f"{p}input-tokens-reset": value,
            f"{p}output-tokens-limit": "1000", f"{p}output-tokens-remaining": "250", f"{p}output-tokens-reset": "60"}


def openai(value: str) -> dict[str, str]:
    return {"x-ratelimit-limit-requests": value, "x-ratelimit-remaining-requests": "5",
            "x-ratelimit-reset-requests": value, "x-ratelimit-limit-tokens": "1000",
            "x-ratelimit-remaining-tokens": "100", "x-ratelimit-reset-tokens": value}


def rejections(value: str) -> list[dict[str, str]]:
    """429 answers whose only reset is `value`: in the unified reset, in retry-after."""
    return [{"anthropic-ratelimit-unified-status": "rejected", "anthropic-ratelimit-unified-reset": value},
            {"retry-after": value},
            {"anthropic-ratelimit-unified-status": "rejected", "anthropic-ratelimit-unified-5h-utilization": "1.0",
             "anthropic-ratelimit-unified-5h-reset": value, "retry-after": value}]


def header_sets():
    for v in NUMBERS:
        yield f"unified:{v[:12]}", "anthropic", unified(v)
        yield f"classic:{v[:12]}", "anthropic", classic(v)
        yield f"openai:{v[:12]}", "openai", openai(v)
