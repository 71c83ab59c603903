"""Caps and token formulas per family (data/caps.toml), against the published worked examples."""

from capsule.observe.media import caps


def test_every_family_names_its_sources_and_the_date_it_was_checked():
    data = caps.data()
    assert {"anthropic", "anthropic-hires", "openai-tile", "openai-patch-mini"} <= set(data["families"])
    for name, spec in data["families"].items():
        assert spec["sources"] and all(s.startswith(("https://", "/work/shared")) for s in spec["sources"]), name
        assert len(spec["checked"]) == 10 and spec["checked"].startswith("20"), name


def test_models_map_to_families_narrow_patterns_first():
    assert caps.family_for("claude-sonnet-4-5-20250929").name == "anthropic"
    assert caps.family_for("claude-opus-4-7").name == "anthropic-hires"
    assert caps.family_for("gpt-4.1-mini-2025-04-14", "openai").name == "openai-patch-mini"
    assert caps.family_for("gpt-5.5", "openai").name == "openai-tile"
    assert caps.family_for(None, "openai").name == "openai-tile"
    assert caps.family_for("some-unknown-model").name == "anthropic"


def test_anthropic_pixels_formula_with_the_apis_own_downscale():
    fam = caps.family("anthropic")
    assert caps.tokens(fam, 1000, 1000) == 1334            # ceil(1e6 / 750)
    w, h = caps.api_size(fam, 3840, 2160)
    assert max(w, h) <= 1568 and w * h <= 1_200_000
    assert caps.tokens(fam, 3840, 2160) == caps.tokens(fam, w, h)


def test_openai_tile_worked_examples():
    fam = caps.family("openai-tile")
    assert caps.tokens(fam, 1024, 1024) == 765             # 768x768: 4 tiles * 170 + 85
    assert caps.tokens(fam, 2048, 4096) == 1105            # 768x1536: 6 tiles


def test_openai_patch_worked_examples():
    mini = caps.family("openai-patch-mini")
    assert caps.tokens(mini, 1024, 1024) == 1659           # 1024 patches * 1.62, rounded up
    w, h = caps.api_size(mini, 1800, 2400)
    assert caps._patches(w, h, 32) <= 1536


def test_target_never_grows_never_passes_the_cap_and_never_costs_more():
    for fam in (caps.family(n) for n in caps.data()["families"]):
        for w, h in ((3840, 2160), (2000, 1125), (800, 600), (100, 5000), (1568, 1568), (1, 1)):
            tw, th = caps.target(fam, w, h)
            assert tw <= w and th <= h
            assert caps.tokens(fam, tw, th) <= caps.tokens(fam, w, h)
            if fam.formula == "pixels":
                assert max(tw, th) <= fam.cap["long_edge"] and tw * th <= fam.cap["max_pixels"]


def test_hires_family_sends_the_standard_cap_unless_a_role_raises_it():
    hires = caps.family("anthropic-hires")
    assert caps.tokens(hires, 2000, 1125) == 3000          # the API reads 2000x1125 whole
    tw, th = caps.target(hires, 2000, 1125)
    assert caps.tokens(hires, tw, th) < 1600
    raised = hires.with_cap(2576, 3_750_000)
    assert caps.target(raised, 2000, 1125) == (2000, 1125)


def test_a_role_cap_lowers_but_never_raises_past_the_api():
    fam = caps.family("anthropic").with_cap(1024, None)
    assert max(caps.target(fam, 3840, 2160)) == 1024
    fam = caps.family("anthropic").with_cap(9000, 9_000_000)
    assert max(caps.target(fam, 3840, 2160)) <= 1568
