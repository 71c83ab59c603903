"""Images sized to the family cap: real Pillow, real bytes; determinism across processes."""

import io
import subprocess
import sys

import pytest
from PIL import Image

from capsule.observe.media import caps, image
from tests.observe.media import fixtures as fx

FAM = caps.family("anthropic")


def test_a_4k_screenshot_is_resized_within_the_cap_and_stays_a_png(code_png):
    out = image.fit(code_png, FAM)
    img = Image.open(io.BytesIO(out.data))
    assert out.changed and out.media_type == "image/png" and img.format == "PNG"
    assert img.size == out.after and max(img.size) <= 1568 and img.size[0] * img.size[1] <= 1_150_000
    assert abs(img.size[0] / img.size[1] - 3840 / 2160) < 0.01
    assert out.tokens_after == caps.tokens(FAM, *img.size) <= out.tokens_before


def test_a_photo_stays_a_jpeg_and_shrinks_in_bytes(photo_jpg):
    out = image.fit(photo_jpg, FAM)
    assert out.media_type == "image/jpeg" and Image.open(io.BytesIO(out.data)).format == "JPEG"
    assert len(out.data) < len(photo_jpg) // 4


def test_an_image_under_the_cap_passes_byte_identical():
    small = fx.screenshot(fx.code_lines(10), size=(1200, 700), font_px=16)
    out = image.fit(small, FAM)
    assert not out.changed and out.data is small


def test_same_input_same_bytes_in_another_process(code_png, tmp_path):
    src = tmp_path / "in.png"
    src.write_bytes(code_png)
    here = image.fit(code_png, FAM).data
    prog = ("import sys; from capsule.observe.media import caps, image; "
            "sys.stdout.buffer.write(image.fit(open(sys.argv[1],'rb').read(), caps.family('anthropic')).data)")
    there = subprocess.run([sys.executable, "-c", prog, str(src)], capture_output=True, check=True).stdout
    assert there == here


def test_metadata_is_not_carried_and_exif_rotation_is_applied():
    img = Image.new("RGB", (4000, 1000), (200, 10, 10))
    exif = Image.Exif()
    exif[0x0112] = 6          # rotate 90: shown as 1000 wide, 4000 high
    buf = io.BytesIO()
    img.save(buf, "JPEG", exif=exif.tobytes())
    out = image.fit(buf.getvalue(), FAM)
    shown = Image.open(io.BytesIO(out.data))
    assert shown.size[1] > shown.size[0]
    assert not shown.getexif()


@pytest.mark.parametrize("data", [b"", b"not an image", b"\x89PNG\r\n\x1a\n" + b"\0" * 30])
def test_unreadable_bytes_raise_media_error(data):
    with pytest.raises(image.MediaError):
        image.fit(data, FAM)


def test_an_animation_is_not_touched():
    frames = [Image.new("RGB", (3000, 2000), c) for c in ((255, 0, 0), (0, 255, 0))]
    buf = io.BytesIO()
    frames[0].save(buf, "GIF", save_all=True, append_images=frames[1:])
    with pytest.raises(image.MediaError):
        image.fit(buf.getvalue(), FAM)


def test_a_decompression_bomb_is_refused_before_decoding():
    buf = io.BytesIO()
    Image.new("1", (10000, 9000)).save(buf, "PNG")      # 90 MP declared, a few KB on the wire
    assert len(buf.getvalue()) < 1 << 20
    with pytest.raises(image.MediaError, match="over"):
        image.fit(buf.getvalue(), FAM)
