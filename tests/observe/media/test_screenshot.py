"""The screenshot-of-text rule: Tesseract decides "mostly text"; a workspace file holding the text
gets a pointer instead of the pixels; else the image is sized as any other."""

from capsule.ground import tokens
from capsule.observe import media
from capsule.observe.media import caps
from capsule.policy.media_policy import MediaPolicy
from tests.observe.media import fixtures as fx

FAM = caps.family("anthropic")


def _workspace(tmp_path, with_source: bool):
    (tmp_path / "README.md").write_text("# a project\n\nNothing about proxies here.\n")
    (tmp_path / "notes.txt").write_text("shopping: bread, milk\n")
    if with_source:
        (tmp_path / "capsule" / "proxy").mkdir(parents=True)
        (tmp_path / "capsule" / "proxy" / "rewrite.py").write_text((fx.ROOT / "capsule/proxy/rewrite.py").read_text())
    return tmp_path


def test_a_screenshot_of_a_workspace_file_becomes_a_pointer_to_it(code_png, tmp_path):
    ws = _workspace(tmp_path, True)
    r = media.transform(code_png, "image/png", FAM, MediaPolicy(), workspace=ws, path="shot.png")
    assert r.action == "pointer", r.details
    text = r.parts[0].text
    assert "capsule/proxy/rewrite.py" in text and "shot.png" in text
    assert r.details["recall"] >= 0.85 and r.details["mostly_text"]
    assert r.tokens_after == tokens.count(text) < r.tokens_before // 10


def test_without_the_source_the_screenshot_is_sized_as_any_image(code_png, tmp_path):
    r = media.transform(code_png, "image/png", FAM, MediaPolicy(), workspace=_workspace(tmp_path, False))
    assert r.action == "resized" and r.details["mostly_text"] is True


def test_a_photo_is_not_mostly_text(photo_jpg, tmp_path):
    r = media.transform(photo_jpg, "image/jpeg", FAM, MediaPolicy(), workspace=_workspace(tmp_path, True))
    assert r.action == "resized" and r.details["mostly_text"] is False


def test_the_resize_rule_never_points(code_png, tmp_path):
    r = media.transform(code_png, "image/png", FAM, MediaPolicy(screenshots="resize"),
                        workspace=_workspace(tmp_path, True))
    assert r.action == "resized" and "ocr_words" not in r.details


def test_a_browser_screenshot_of_a_workspace_page_points_to_its_html(tmp_path):
    page = tmp_path / "site" / "notes.html"
    page.parent.mkdir()
    page.write_text(fx.NOTES_HTML)
    (tmp_path / "README.md").write_text("# unrelated\n")
    shot = fx.browser_screenshot(page)
    r = media.transform(shot, "image/png", FAM, MediaPolicy(), workspace=tmp_path)
    assert r.action == "pointer", r.details
    assert "site/notes.html" in r.parts[0].text and r.tokens_after < 100
