"""Session-wide media fixtures (made once by the real tools; see fixtures.py)."""

import shutil

import pytest

from tests.observe.media import fixtures as fx


def pytest_configure(config):
    for tool in ("tesseract", "pdftotext", "pdftoppm"):
        if shutil.which(tool) is None:   # scripts/test-all installs them; a missing one is a setup fault
            raise pytest.UsageError(f"{tool} is missing: run scripts/test-all (apt: tesseract-ocr poppler-utils)")


@pytest.fixture(scope="session")
def code_png():
    return fx.screenshot(fx.code_lines())


@pytest.fixture(scope="session")
def log_png():
    return fx.screenshot(fx.log_lines())


@pytest.fixture(scope="session")
def photo_jpg():
    return fx.photo()


@pytest.fixture(scope="session")
def pdf20():
    return fx.born_digital_pdf(20)


@pytest.fixture(scope="session")
def scanned():
    return fx.scanned_pdf(2)
