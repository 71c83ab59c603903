"""Which real registry projects each corpus set is made from (data, not code).

Not responsible for running anything (make_corpus.py, recipes.py do).
Invariant: no package appears in two sets; a holdout or fresh figure is on projects nobody tuned on
(fresh: made last, measured once by the lead, never opened while changing rules).
"""

# Per Python package: the sdist (PyPI name, version, older versions for a real git history),
# where its code and tests are, which files an agent reads, a symbol it hunts for, and scripts
# that really fail inside the package (run with `python -c`).
PY_DEV = [
    {"name": "click", "pypi": "click", "version": "8.5.1", "history": ["8.1.7", "8.1.8"],
     "src": "src/click", "tests": "tests", "env": {"PYTHONPATH": "src"},
     # test_deprecations needs click's installed metadata: the first run shows that real collection error
     "tests_ok": "tests --ignore=tests/test_deprecations.py",
     "test_files": ["tests/test_options.py", "tests/test_basic.py", "tests/test_termui.py"],
     "big": "src/click/core.py", "small": "src/click/globals.py", "symbol": "_make_default_short_help",
     "crash": [("bad_choice", "import click; click.Choice(['fast', 'slow']).convert('medium', None, None)",
                "Check why the mode option rejects the value."),
               ("missing_arg", "import click\n@click.command()\n@click.argument('path')\ndef cli(path): pass\n"
                "cli.main(args=[], standalone_mode=False)", "Run the CLI entry point without arguments.")]},
    {"name": "jinja2", "pypi": "jinja2", "version": "3.1.6", "history": ["3.1.4", "3.1.5"],
     "src": "src/jinja2", "tests": "tests", "env": {"PYTHONPATH": "src"}, "deps": ["markupsafe"],
     "tests_ok": "tests --ignore=tests/test_async.py --ignore=tests/test_async_filters.py",   # these need trio
     "test_files": ["tests/test_filters.py", "tests/test_api.py", "tests/test_lexnparse.py"],
     "big": "src/jinja2/filters.py", "small": "src/jinja2/constants.py", "symbol": "do_truncate",
     "crash": [("undefined", "import jinja2\nenv = jinja2.Environment(undefined=jinja2.StrictUndefined)\n"
                "print(env.from_string('Hello {{ user.name }}!').render(users=[]))",
                "Render the greeting template."),
               ("syntax", "import jinja2\njinja2.Template('{% for item in items %}{{ item }}\\n{% endfro %}')",
                "Find the syntax error in the list template.")]},
    {"name": "toolz", "pypi": "toolz", "version": "1.2.0", "history": ["0.12.1", "1.0.0"],
     "src": "toolz", "tests": "toolz/tests", "env": {"PYTHONPATH": "."},
     "test_files": ["toolz/tests/test_itertoolz.py", "toolz/tests/test_dicttoolz.py",
                    "toolz/tests/test_functoolz.py"],
     "big": "toolz/itertoolz.py", "small": "toolz/utils.py", "symbol": "sliding_window",
     "crash": [("get_in", "import toolz\nprint(toolz.get_in(['user', 'address', 'city'], {'user': {'address': None}},"
                " no_default=True))", "Read the city from the nested record.")]},
    {"name": "more-itertools", "pypi": "more-itertools", "version": "11.2.1", "history": ["10.5.0", "10.6.0"],
     "src": "more_itertools", "tests": "tests/test_recipes.py", "env": {"PYTHONPATH": "."},
     "test_files": ["tests/test_recipes.py", "tests/test_more.py"],
     "unittest": "python -m unittest tests.test_recipes",
     "big": "more_itertools/recipes.py", "small": "more_itertools/__init__.py", "symbol": "chunked",
     "crash": [("one", "import more_itertools as mi\nrows = [{'id': 1}, {'id': 1}]\n"
                "print(mi.one(r for r in rows if r['id'] == 1))", "Fetch the single row with id 1.")]},
]

PY_HOLDOUT = [
    {"name": "cachetools", "pypi": "cachetools", "version": "8.0.2", "history": ["5.5.0", "5.5.1"],
     "src": "src/cachetools", "tests": "tests", "env": {"PYTHONPATH": "src"},
     "test_files": ["tests/test_lru.py", "tests/test_ttl.py", "tests/test_cached.py"],
     "unittest": "python -m unittest discover -s tests -t .",
     "big": "src/cachetools/__init__.py", "small": "src/cachetools/keys.py", "symbol": "hashkey",
     "crash": [("too_large", "import cachetools\nc = cachetools.LRUCache(maxsize=10, getsizeof=len)\n"
                "c['report'] = 'x' * 64", "Cache the rendered report.")]},
    {"name": "boltons", "pypi": "boltons", "version": "26.2.0", "history": ["24.1.0", "25.0.0"],
     "src": "boltons", "tests": "tests", "env": {"PYTHONPATH": "."},
     "test_files": ["tests/test_iterutils.py", "tests/test_strutils.py", "tests/test_dictutils.py"],
     "big": "boltons/iterutils.py", "small": "boltons/easterutils.py", "symbol": "remap",
     "crash": [("timedelta", "from boltons.timeutils import parse_timedelta\nprint(parse_timedelta('3 fortnights'))",
                "Parse the retention period from the config.")]},
    {"name": "pluggy", "pypi": "pluggy", "version": "1.7.0", "history": ["1.5.0", "1.6.0"],
     "src": "src/pluggy", "tests": "testing", "env": {"PYTHONPATH": "src"},
     "test_files": ["testing/test_pluginmanager.py", "testing/test_hookcaller.py", "testing/test_multicall.py"],
     "big": "src/pluggy/_manager.py", "small": "src/pluggy/_result.py", "symbol": "register",
     "crash": [("unknown_hook", "import pluggy\nspec = pluggy.HookspecMarker('app')\n"
                "class Spec:\n    @spec\n    def setup(self, cfg): pass\n"
                "pm = pluggy.PluginManager('app'); pm.add_hookspecs(Spec)\nprint(pm.hook.setup('prod'))",
                "Call the setup hook of every plugin.")]},
    {"name": "iniconfig", "pypi": "iniconfig", "version": "2.3.1", "history": ["2.0.0", "2.1.0"],
     "src": "src/iniconfig", "tests": "testing", "env": {"PYTHONPATH": "src"},
     "test_files": ["testing/test_iniconfig.py"],
     "big": "src/iniconfig/__init__.py", "small": "src/iniconfig/_parse.py", "symbol": "parse_lines",
     "crash": [("parse", "import iniconfig\ncfg = iniconfig.IniConfig('setup.cfg', data='[tool]\\nname = x\\n"
                "  continued\\nbroken line\\n')", "Load the tool section of setup.cfg.")]},
]

# npm packages: installed together into one scratch project (npm install log, npm ls, node_modules
# listings), one of them unpacked with `npm pack` as the project an agent reads and lints.
NPM_DEV = {"install": ["express@5", "debug@4"], "view_big": "typescript", "pip_install": "rich", "npm_silly": "chalk@4",
           "serve": "click", "crate": "semver", "missing": ["docs/api.html", "src/click/_compat.pyc"],
           "docker_config": '{"region": "eu-west-1", "retries": 3,}\n',
           "docker_crash": "import json; json.loads(open('/etc/os-release').read())", "pack": "express@5.1.0", "view": "express",
           "lint_dir": "lib", "big": "lib/response.js", "symbol": "sendFile",
           "crash": [("use_number", "require('express')().use(42)", "Mount the router on the app."),
                     ("missing", "require('./lib/express').static.mime.lookup('a.txt')",
                      "Look up the mime type the static middleware uses.")]}
NPM_HOLDOUT = {"install": ["commander@12", "yargs@17"], "view_big": "react", "pip_install": "httpx", "npm_silly": "lodash",
               "serve": "boltons", "crate": "itoa", "missing": ["boltons/missing.py", "favicon.ico", "docs/index.html"],
               "docker_config": '{"db": {"host": "db", "port": 5432}\n',
               "docker_crash": "import sqlite3; sqlite3.connect('/nonexistent/db.sqlite')", "pack": "yargs@17.7.2", "view": "yargs",
               "lint_dir": "build/lib", "big": "build/lib/yargs-factory.js", "symbol": "demandOption",
               "crash": [("required", "const {Command}=require('commander');new Command().exitOverride()"
                          ".requiredOption('-c, --config <path>').parse(['node','x'])",
                          "Run the CLI without the config flag.")]}

# fresh: a third set made after the filters were tuned on dev (and checked on holdout); projects in neither.
PY_FRESH = [
    {"name": "itsdangerous", "pypi": "itsdangerous", "version": "2.2.0", "history": ["2.0.1", "2.1.2"],
     "src": "src/itsdangerous", "tests": "tests", "env": {"PYTHONPATH": "src"}, "deps": ["freezegun"],
     "test_files": ["tests/test_itsdangerous/test_serializer.py", "tests/test_itsdangerous/test_signer.py",
                    "tests/test_itsdangerous/test_timed.py"],
     "big": "src/itsdangerous/serializer.py", "small": "src/itsdangerous/encoding.py", "symbol": "load_payload",
     "crash": [("bad_signature", "from itsdangerous import URLSafeSerializer\n"
                "s = URLSafeSerializer('secret-key', salt='activate')\n"
                "print(s.loads('eyJ1c2VyX2lkIjo0Mn0.kP3sJcFz2vQ9bQ'))", "Read the user id from the activation link."),
               ("expired", "import time\nfrom itsdangerous import TimestampSigner\ns = TimestampSigner('secret-key')\n"
                "token = s.sign('user-42')\ntime.sleep(2)\nprint(s.unsign(token, max_age=1))",
                "Check the session token is still valid.")]},
    {"name": "idna", "pypi": "idna", "version": "3.20", "history": ["3.7", "3.10"],
     "src": "idna", "tests": "tests", "env": {"PYTHONPATH": "."}, "deps": ["hypothesis"],
     "test_files": ["tests/test_idna.py", "tests/test_idna_codec.py", "tests/test_intranges.py"],
     "unittest": "python -m unittest discover -s tests -t .",
     "big": "idna/core.py", "small": "idna/intranges.py", "symbol": "check_bidi",
     "crash": [("codepoint", "import idna\nprint(idna.encode('shop_eu.example.com'))",
                "Encode the shop's host name for the request."),
               ("alabel", "import idna\nprint(idna.decode('xn--80ak6aa92e.xn--zz'))",
                "Show the host name from the log in Unicode.")]},
    {"name": "python-dateutil", "pypi": "python-dateutil", "version": "4.0.0", "history": ["2.9.0.post0", "3.0.0"],
     "src": "src/dateutil", "tests": "tests", "env": {"PYTHONPATH": "src"},
     # its conftest needs pytest-cov's marker, two test modules import attrs
     "deps": ["attrs", "freezegun", "hypothesis", "pytest-cov"],
     "test_files": ["tests/test_relativedelta.py", "tests/test_parser.py", "tests/test_easter.py"],
     "big": "src/dateutil/rrule.py", "small": "src/dateutil/easter.py", "symbol": "_invalidates_cache",
     "crash": [("parse", "from dateutil import parser\nprint(parser.parse('2024-02-30 10:15'))",
                "Parse the meeting time from the invite."),
               ("months", "from dateutil.relativedelta import relativedelta\nprint(relativedelta(months=1.5))",
                "Add six weeks to the due date.")]},
    {"name": "packaging", "pypi": "packaging", "version": "26.4", "history": ["24.2", "25.0"],
     "src": "src/packaging", "tests": "tests", "env": {"PYTHONPATH": "src"},
     "deps": ["pretend", "tomli_w", "hypothesis"],
     "test_files": ["tests/test_tags.py", "tests/test_markers.py", "tests/test_requirements.py"],
     "big": "src/packaging/specifiers.py", "small": "src/packaging/_structures.py", "symbol": "canonicalize_version",
     "crash": [("version", "from packaging.version import Version\nprint(Version('2.0-final-rc'))",
                "Compare the release candidate with the installed version."),
               ("requirement", "from packaging.requirements import Requirement\n"
                "print(Requirement('requests >= 2.31 ; python_version >'))", "Check the requirement line.")]},
]

NPM_FRESH = {"install": ["koa@2", "uuid@9"], "view_big": "next", "pip_install": "requests", "npm_silly": "axios",
             "serve": "itsdangerous", "crate": "autocfg",
             "missing": ["src/itsdangerous/missing.py", "robots.txt", "docs/changes.html"],
             "docker_config": '{"workers": 4, "log_level": "info"\n',
             "docker_crash": "import urllib.request; urllib.request.urlopen('http://127.0.0.1:9/health')",
             "pack": "koa@2.16.4", "view": "koa",
             "lint_dir": "lib", "big": "lib/application.js", "symbol": "createContext",
             "crash": [("use_number", "const Koa = require('koa'); new Koa().use(42)",
                        "Register the logging middleware."),
                       ("uuid_ns", "console.log(require('uuid').v5('order-17', 'not-a-namespace'))",
                        "Derive the order's stable id.")]}

SETS = {"dev": {"py": PY_DEV, "npm": NPM_DEV, "own_history": True},
        "holdout": {"py": PY_HOLDOUT, "npm": NPM_HOLDOUT, "own_history": False},
        "fresh": {"py": PY_FRESH, "npm": NPM_FRESH, "own_history": False}}
