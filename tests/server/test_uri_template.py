"""Tests for mcpkit.server.uri_template (RFC 6570 expansion and reverse matching)."""

from __future__ import annotations

import string
import time
from unittest.mock import patch

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from mcpkit.server import uri_template
from mcpkit.server.uri_template import UriTemplate, UriTemplateError

# The variable set of RFC 6570 section 3.2 (a superset of the section 1.2 ones).
RFC_VALUES: dict[str, object] = {
    "count": ("one", "two", "three"),
    "dom": ("example", "com"),
    "dub": "me/too",
    "hello": "Hello World!",
    "half": "50%",
    "var": "value",
    "who": "fred",
    "base": "http://example.com/home/",
    "path": "/foo/bar",
    "list": ("red", "green", "blue"),
    "keys": {"semi": ";", "dot": ".", "comma": ","},
    "v": "6",
    "x": "1024",
    "y": "768",
    "empty": "",
    "empty_keys": {},
    "undef": None,
}

# RFC 6570 section 1.2, the level 1 to level 4 example tables.
LEVEL_1 = [
    ("{var}", "value"),
    ("{hello}", "Hello%20World%21"),
]
LEVEL_2 = [
    ("{+var}", "value"),
    ("{+hello}", "Hello%20World!"),
    ("{+path}/here", "/foo/bar/here"),
    ("here?ref={+path}", "here?ref=/foo/bar"),
    ("X{#var}", "X#value"),
    ("X{#hello}", "X#Hello%20World!"),
]
LEVEL_3 = [
    ("map?{x,y}", "map?1024,768"),
    ("{x,hello,y}", "1024,Hello%20World%21,768"),
    ("{+x,hello,y}", "1024,Hello%20World!,768"),
    ("{+path,x}/here", "/foo/bar,1024/here"),
    ("{#x,hello,y}", "#1024,Hello%20World!,768"),
    ("{#path,x}/here", "#/foo/bar,1024/here"),
    ("X{.var}", "X.value"),
    ("X{.x,y}", "X.1024.768"),
    ("{/var}", "/value"),
    ("{/var,x}/here", "/value/1024/here"),
    ("{;x,y}", ";x=1024;y=768"),
    ("{;x,y,empty}", ";x=1024;y=768;empty"),
    ("{?x,y}", "?x=1024&y=768"),
    ("{?x,y,empty}", "?x=1024&y=768&empty="),
    ("?fixed=yes{&x}", "?fixed=yes&x=1024"),
    ("{&x,y,empty}", "&x=1024&y=768&empty="),
]
LEVEL_4 = [
    ("{var:3}", "val"),
    ("{var:30}", "value"),
    ("{list}", "red,green,blue"),
    ("{list*}", "red,green,blue"),
    ("{keys}", "semi,%3B,dot,.,comma,%2C"),
    ("{keys*}", "semi=%3B,dot=.,comma=%2C"),
    ("{+path:6}/here", "/foo/b/here"),
    ("{+list}", "red,green,blue"),
    ("{+list*}", "red,green,blue"),
    ("{+keys}", "semi,;,dot,.,comma,,"),
    ("{+keys*}", "semi=;,dot=.,comma=,"),
    ("{#path:6}/here", "#/foo/b/here"),
    ("{#list}", "#red,green,blue"),
    ("{#list*}", "#red,green,blue"),
    ("{#keys}", "#semi,;,dot,.,comma,,"),
    ("{#keys*}", "#semi=;,dot=.,comma=,"),
    ("X{.var:3}", "X.val"),
    ("X{.list}", "X.red,green,blue"),
    ("X{.list*}", "X.red.green.blue"),
    ("X{.keys}", "X.semi,%3B,dot,.,comma,%2C"),
    ("X{.keys*}", "X.semi=%3B.dot=..comma=%2C"),
    ("{/var:1,var}", "/v/value"),
    ("{/list}", "/red,green,blue"),
    ("{/list*}", "/red/green/blue"),
    ("{/list*,path:4}", "/red/green/blue/%2Ffoo"),
    ("{/keys}", "/semi,%3B,dot,.,comma,%2C"),
    ("{/keys*}", "/semi=%3B/dot=./comma=%2C"),
    ("{;hello:5}", ";hello=Hello"),
    ("{;list}", ";list=red,green,blue"),
    ("{;list*}", ";list=red;list=green;list=blue"),
    ("{;keys}", ";keys=semi,%3B,dot,.,comma,%2C"),
    ("{;keys*}", ";semi=%3B;dot=.;comma=%2C"),
    ("{?var:3}", "?var=val"),
    ("{?list}", "?list=red,green,blue"),
    ("{?list*}", "?list=red&list=green&list=blue"),
    ("{?keys}", "?keys=semi,%3B,dot,.,comma,%2C"),
    ("{?keys*}", "?semi=%3B&dot=.&comma=%2C"),
    ("{&var:3}", "&var=val"),
    ("{&list}", "&list=red,green,blue"),
    ("{&list*}", "&list=red&list=green&list=blue"),
    ("{&keys}", "&keys=semi,%3B,dot,.,comma,%2C"),
    ("{&keys*}", "&semi=%3B&dot=.&comma=%2C"),
]

# RFC 6570 section 3.2, sections 3.2.1 to 3.2.9.
SECTION_3_2_1 = [
    ("{count}", "one,two,three"),
    ("{count*}", "one,two,three"),
    ("{/count}", "/one,two,three"),
    ("{/count*}", "/one/two/three"),
    ("{;count}", ";count=one,two,three"),
    ("{;count*}", ";count=one;count=two;count=three"),
    ("{?count}", "?count=one,two,three"),
    ("{?count*}", "?count=one&count=two&count=three"),
    ("{&count*}", "&count=one&count=two&count=three"),
]
SECTION_3_2_2 = [
    ("{var}", "value"),
    ("{hello}", "Hello%20World%21"),
    ("{half}", "50%25"),
    ("O{empty}X", "OX"),
    ("O{undef}X", "OX"),
    ("{x,y}", "1024,768"),
    ("{x,hello,y}", "1024,Hello%20World%21,768"),
    ("?{x,empty}", "?1024,"),
    ("?{x,undef}", "?1024"),
    ("?{undef,y}", "?768"),
    ("{var:3}", "val"),
    ("{var:30}", "value"),
    ("{list}", "red,green,blue"),
    ("{list*}", "red,green,blue"),
    ("{keys}", "semi,%3B,dot,.,comma,%2C"),
    ("{keys*}", "semi=%3B,dot=.,comma=%2C"),
]
SECTION_3_2_3 = [
    ("{+var}", "value"),
    ("{+hello}", "Hello%20World!"),
    ("{+half}", "50%25"),
    ("{base}index", "http%3A%2F%2Fexample.com%2Fhome%2Findex"),
    ("{+base}index", "http://example.com/home/index"),
    ("O{+empty}X", "OX"),
    ("O{+undef}X", "OX"),
    ("{+path}/here", "/foo/bar/here"),
    ("here?ref={+path}", "here?ref=/foo/bar"),
    ("up{+path}{var}/here", "up/foo/barvalue/here"),
    ("{+x,hello,y}", "1024,Hello%20World!,768"),
    ("{+path,x}/here", "/foo/bar,1024/here"),
    ("{+path:6}/here", "/foo/b/here"),
    ("{+list}", "red,green,blue"),
    ("{+list*}", "red,green,blue"),
    ("{+keys}", "semi,;,dot,.,comma,,"),
    ("{+keys*}", "semi=;,dot=.,comma=,"),
]
SECTION_3_2_4 = [
    ("{#var}", "#value"),
    ("{#hello}", "#Hello%20World!"),
    ("{#half}", "#50%25"),
    ("foo{#empty}", "foo#"),
    ("foo{#undef}", "foo"),
    ("{#x,hello,y}", "#1024,Hello%20World!,768"),
    ("{#path,x}/here", "#/foo/bar,1024/here"),
    ("{#path:6}/here", "#/foo/b/here"),
    ("{#list}", "#red,green,blue"),
    ("{#list*}", "#red,green,blue"),
    ("{#keys}", "#semi,;,dot,.,comma,,"),
    ("{#keys*}", "#semi=;,dot=.,comma=,"),
]
SECTION_3_2_5 = [
    ("{.who}", ".fred"),
    ("{.who,who}", ".fred.fred"),
    ("{.half,who}", ".50%25.fred"),
    ("www{.dom*}", "www.example.com"),
    ("X{.var}", "X.value"),
    ("X{.empty}", "X."),
    ("X{.undef}", "X"),
    ("X{.var:3}", "X.val"),
    ("X{.list}", "X.red,green,blue"),
    ("X{.list*}", "X.red.green.blue"),
    ("X{.keys}", "X.semi,%3B,dot,.,comma,%2C"),
    ("X{.keys*}", "X.semi=%3B.dot=..comma=%2C"),
    ("X{.empty_keys}", "X"),
    ("X{.empty_keys*}", "X"),
]
SECTION_3_2_6 = [
    ("{/who}", "/fred"),
    ("{/who,who}", "/fred/fred"),
    ("{/half,who}", "/50%25/fred"),
    ("{/who,dub}", "/fred/me%2Ftoo"),
    ("{/var}", "/value"),
    ("{/var,empty}", "/value/"),
    ("{/var,undef}", "/value"),
    ("{/var,x}/here", "/value/1024/here"),
    ("{/var:1,var}", "/v/value"),
    ("{/list}", "/red,green,blue"),
    ("{/list*}", "/red/green/blue"),
    ("{/list*,path:4}", "/red/green/blue/%2Ffoo"),
    ("{/keys}", "/semi,%3B,dot,.,comma,%2C"),
    ("{/keys*}", "/semi=%3B/dot=./comma=%2C"),
]
SECTION_3_2_7 = [
    ("{;who}", ";who=fred"),
    ("{;half}", ";half=50%25"),
    ("{;empty}", ";empty"),
    ("{;v,empty,who}", ";v=6;empty;who=fred"),
    ("{;v,bar,who}", ";v=6;who=fred"),
    ("{;x,y}", ";x=1024;y=768"),
    ("{;x,y,empty}", ";x=1024;y=768;empty"),
    ("{;x,y,undef}", ";x=1024;y=768"),
    ("{;hello:5}", ";hello=Hello"),
    ("{;list}", ";list=red,green,blue"),
    ("{;list*}", ";list=red;list=green;list=blue"),
    ("{;keys}", ";keys=semi,%3B,dot,.,comma,%2C"),
    ("{;keys*}", ";semi=%3B;dot=.;comma=%2C"),
]
SECTION_3_2_8 = [
    ("{?who}", "?who=fred"),
    ("{?half}", "?half=50%25"),
    ("{?x,y}", "?x=1024&y=768"),
    ("{?x,y,empty}", "?x=1024&y=768&empty="),
    ("{?x,y,undef}", "?x=1024&y=768"),
    ("{?var:3}", "?var=val"),
    ("{?list}", "?list=red,green,blue"),
    ("{?list*}", "?list=red&list=green&list=blue"),
    ("{?keys}", "?keys=semi,%3B,dot,.,comma,%2C"),
    ("{?keys*}", "?semi=%3B&dot=.&comma=%2C"),
]
SECTION_3_2_9 = [
    ("{&who}", "&who=fred"),
    ("{&half}", "&half=50%25"),
    ("?fixed=yes{&x}", "?fixed=yes&x=1024"),
    ("{&x,y,empty}", "&x=1024&y=768&empty="),
    ("{&x,y,undef}", "&x=1024&y=768"),
    ("{&var:3}", "&var=val"),
    ("{&list}", "&list=red,green,blue"),
    ("{&list*}", "&list=red&list=green&list=blue"),
    ("{&keys}", "&keys=semi,%3B,dot,.,comma,%2C"),
    ("{&keys*}", "&semi=%3B&dot=.&comma=%2C"),
]

RFC_TABLES = {
    "1.2-level1": LEVEL_1,
    "1.2-level2": LEVEL_2,
    "1.2-level3": LEVEL_3,
    "1.2-level4": LEVEL_4,
    "3.2.1": SECTION_3_2_1,
    "3.2.2": SECTION_3_2_2,
    "3.2.3": SECTION_3_2_3,
    "3.2.4": SECTION_3_2_4,
    "3.2.5": SECTION_3_2_5,
    "3.2.6": SECTION_3_2_6,
    "3.2.7": SECTION_3_2_7,
    "3.2.8": SECTION_3_2_8,
    "3.2.9": SECTION_3_2_9,
}
RFC_CASES = [
    pytest.param(template, expected, id=f"{section}:{template}")
    for section, table in RFC_TABLES.items()
    for template, expected in table
]


@pytest.mark.parametrize(("template", "expected"), RFC_CASES)
def test_rfc_expansion_examples(template: str, expected: str) -> None:
    assert UriTemplate(template).expand(RFC_VALUES) == expected


# Reverse matching of RFC expansions, where the inverse is well defined.
RFC_MATCHES: list[tuple[str, str, dict[str, str | list[str]]]] = [
    ("{var}", "value", {"var": "value"}),
    ("{hello}", "Hello%20World%21", {"hello": "Hello World!"}),
    ("{half}", "50%25", {"half": "50%"}),
    ("O{empty}X", "OX", {"empty": ""}),
    ("{x,y}", "1024,768", {"x": "1024", "y": "768"}),
    ("?{x,empty}", "?1024,", {"x": "1024", "empty": ""}),
    ("{+base}index", "http://example.com/home/index", {"base": "http://example.com/home/"}),
    ("{+path}/here", "/foo/bar/here", {"path": "/foo/bar"}),
    ("here?ref={+path}", "here?ref=/foo/bar", {"path": "/foo/bar"}),
    ("{+path:6}/here", "/foo/b/here", {"path": "/foo/b"}),
    ("{+x,hello,y}", "1024,Hello%20World!,768", {"x": "1024", "hello": "Hello World!", "y": "768"}),
    ("{#path,x}/here", "#/foo/bar,1024/here", {"path": "/foo/bar", "x": "1024"}),
    ("foo{#empty}", "foo#", {"empty": ""}),
    ("foo{#undef}", "foo", {}),
    ("X{.x,y}", "X.1024.768", {"x": "1024", "y": "768"}),
    ("X{.empty}", "X.", {"empty": ""}),
    ("X{.undef}", "X", {}),
    ("www{.dom*}", "www.example.com", {"dom": ["example", "com"]}),
    ("{count*}", "one,two,three", {"count": ["one", "two", "three"]}),
    ("{/var,x}/here", "/value/1024/here", {"var": "value", "x": "1024"}),
    ("{/var:1,var}", "/v/value", {"var": "value"}),
    ("{/list*}", "/red/green/blue", {"list": ["red", "green", "blue"]}),
    ("{;x,y,empty}", ";x=1024;y=768;empty", {"x": "1024", "y": "768", "empty": ""}),
    ("{;v,bar,who}", ";v=6;who=fred", {"v": "6", "who": "fred"}),
    ("{;hello:5}", ";hello=Hello", {"hello": "Hello"}),
    ("{;list*}", ";list=red;list=green;list=blue", {"list": ["red", "green", "blue"]}),
    ("{;list}", ";list=red,green,blue", {"list": "red,green,blue"}),
    ("{?x,y,empty}", "?x=1024&y=768&empty=", {"x": "1024", "y": "768", "empty": ""}),
    ("{?x,y,undef}", "?x=1024&y=768", {"x": "1024", "y": "768"}),
    ("{?list*}", "?list=red&list=green&list=blue", {"list": ["red", "green", "blue"]}),
    ("{?var:3}", "?var=val", {"var": "val"}),
    ("?fixed=yes{&x}", "?fixed=yes&x=1024", {"x": "1024"}),
    # Greedy, left to right: the earlier expression takes what it can.
    ("up{+path}{var}/here", "up/foo/barvalue/here", {"path": "/foo/barvalue", "var": ""}),
]


@pytest.mark.parametrize(("template", "uri", "expected"), RFC_MATCHES)
def test_rfc_examples_match(template: str, uri: str, expected: dict[str, object]) -> None:
    assert UriTemplate(template).match(uri) == expected


# RFC expansions that deliberately do NOT match back: a single-segment variable never
# decodes to a value holding '/' (module docstring, "Safe values"); {+v} is the opt-in.
@pytest.mark.parametrize(
    ("template", "uri"),
    [
        ("{base}index", "http%3A%2F%2Fexample.com%2Fhome%2Findex"),
        ("{/who,dub}", "/fred/me%2Ftoo"),
        ("{path}", "%2Ffoo%2Fbar"),
    ],
)
def test_rfc_expansions_with_encoded_slash_do_not_match(template: str, uri: str) -> None:
    assert UriTemplate(template).match(uri) is None


# --- MCP-style templates -------------------------------------------------------------


def test_mcp_config_key() -> None:
    t = UriTemplate("config://{key}")
    assert t.variables == ("key",)
    assert t.expand({"key": "app.name"}) == "config://app.name"
    assert t.expand({"key": "a/b c"}) == "config://a%2Fb%20c"
    assert t.match("config://app.name") == {"key": "app.name"}
    assert t.match("config://a%20b%2Cc") == {"key": "a b,c"}
    assert t.match("config://a%2Fb%20c") is None  # never a '/' in a single segment
    assert t.match("config://") == {"key": ""}
    assert t.match("config://a/b") is None
    assert t.match("config://a?b") is None
    assert t.match("other://a") is None


def test_mcp_file_path() -> None:
    t = UriTemplate("file:///{+path}")
    assert t.expand({"path": "docs/read me.md"}) == "file:///docs/read%20me.md"
    assert t.match("file:///docs/read%20me.md") == {"path": "docs/read me.md"}
    assert t.match("file:///a/b/c,d.txt") == {"path": "a/b/c,d.txt"}
    assert t.match("file:///") == {"path": ""}
    assert t.match("file://x") is None


def test_mcp_nested_ids() -> None:
    t = UriTemplate("users://{id}/posts/{post_id}")
    assert t.variables == ("id", "post_id")
    assert t.expand({"id": 42, "post_id": "p-1"}) == "users://42/posts/p-1"
    assert t.match("users://42/posts/p-1") == {"id": "42", "post_id": "p-1"}
    assert t.match("users://42/posts/") == {"id": "42", "post_id": ""}
    assert t.match("users://42/posts/1/2") is None
    assert t.match("users://42/comments/1") is None


def test_mcp_search_query() -> None:
    t = UriTemplate("search://q{?query,limit}")
    assert t.expand({"query": "mcp rocks", "limit": 10}) == "search://q?query=mcp%20rocks&limit=10"
    assert t.expand({"limit": 5}) == "search://q?limit=5"
    assert t.expand({}) == "search://q"
    assert t.match("search://q?query=mcp%20rocks&limit=10") == {"query": "mcp rocks", "limit": "10"}
    # Any order, each optional, unknown parameters ignored.
    assert t.match("search://q?limit=10&query=x") == {"query": "x", "limit": "10"}
    assert t.match("search://q?page=2&limit=3") == {"limit": "3"}
    assert t.match("search://q?query") == {"query": ""}
    assert t.match("search://q") == {}
    assert t.match("search://q?") == {}
    assert t.match("search://x?query=1") is None


def test_mcp_static_middle() -> None:
    t = UriTemplate("test://template/{id}/data")
    assert t.expand({"id": "abc"}) == "test://template/abc/data"
    assert t.match("test://template/abc/data") == {"id": "abc"}
    assert t.match("test://template/a/b/data") is None
    assert t.match("test://template/abc/data/") is None


# --- Matching rules -------------------------------------------------------------------


def test_path_segments_explode_returns_list() -> None:
    t = UriTemplate("repo://{owner}{/path*}")
    assert t.match("repo://me/a/b/c") == {"owner": "me", "path": ["a", "b", "c"]}
    assert t.match("repo://me/a%20b") == {"owner": "me", "path": ["a b"]}
    assert t.match("repo://me/a%2Fb") is None  # each item is one segment
    assert t.match("repo://me/a/../b") is None
    assert t.match("repo://me") == {"owner": "me"}


def test_exploded_query_returns_what_is_present() -> None:
    t = UriTemplate("tags://all{?tag*,sort}")
    assert t.match("tags://all?tag=a&sort=up&tag=b") == {"tag": ["a", "b"], "sort": "up"}
    assert t.match("tags://all?sort=up") == {"sort": "up"}
    # A repeated non-exploded parameter yields its first value.
    assert t.match("tags://all?sort=up&sort=down") == {"sort": "up"}


def test_query_continuation_pools_parameters() -> None:
    t = UriTemplate("x://y{?a}{&b}")
    assert t.match("x://y?b=2&a=1") == {"a": "1", "b": "2"}
    t2 = UriTemplate("x://y?fixed=1{&b,c}")
    assert t2.match("x://y?fixed=1&c=3&zz=0&b=2") == {"b": "2", "c": "3"}


def test_query_plus_is_not_space_and_values_are_decoded() -> None:
    t = UriTemplate("s://q{?q}")
    assert t.match("s://q?q=a+b%20c%26d") == {"q": "a+b c&d"}
    assert t.match("s://q?q=%C3%A9") == {"q": "é"}


def test_prefix_matches_at_most_n_characters() -> None:
    t = UriTemplate("p://{v:3}/x")
    assert t.match("p://abc/x") == {"v": "abc"}
    assert t.match("p://ab/x") == {"v": "ab"}
    assert t.match("p://abcd/x") is None
    # A pct-encoded UTF-8 sequence counts as one character (RFC 6570 section 2.4.1).
    assert t.match("p://a%C3%A9b/x") == {"v": "aéb"}
    assert t.match("p://%F0%9F%98%80%F0%9F%98%80%F0%9F%98%80/x") == {"v": "😀😀😀"}
    assert t.match("p://a%C3%A9bc/x") is None
    assert UriTemplate("{?v:2}").match("?v=abc") is None


def test_named_and_label_presence() -> None:
    assert UriTemplate("{;a,b}").match(";b") == {"b": ""}
    assert UriTemplate("{;a,ab}").match(";ab=1") == {"ab": "1"}
    assert UriTemplate("x{/a}").match("x") == {}
    assert UriTemplate("x{/a}").match("x/") == {"a": ""}
    assert UriTemplate("{a*}").match("") == {}
    assert UriTemplate("{a}").match("") == {"a": ""}


def test_simple_values_do_not_cross_delimiters() -> None:
    t = UriTemplate("{a}")
    for uri in ("a/b", "a?b", "a#b", "a,b"):
        assert t.match(uri) is None
    assert UriTemplate("{.a}").match(".x.y") is None
    assert UriTemplate("{;a}").match(";a=x/y") is None
    assert UriTemplate("{+a}").match("x/y,z") == {"a": "x/y,z"}
    assert UriTemplate("{#a}").match("#x/y?z") == {"a": "x/y?z"}


def test_repeated_variable_must_agree() -> None:
    t = UriTemplate("r://{x}/{x}")
    assert t.variables == ("x",)
    assert t.match("r://a/a") == {"x": "a"}
    assert t.match("r://a/b") is None
    t2 = UriTemplate("r://{x:2}/{x}")
    assert t2.match("r://ab/abc") == {"x": "abc"}
    assert t2.match("r://ab/xyz") is None


def test_literals_outside_uri_charset_are_encoded_and_matched_both_ways() -> None:
    t = UriTemplate("my files/{name}%")
    assert t.expand({"name": "é"}) == "my%20files/%C3%A9%25"
    assert t.match("my%20files/%C3%A9%25") == {"name": "é"}
    assert t.match("my files/x%") == {"name": "x"}
    assert t.match("my%20files/x%25") == {"name": "x"}


def test_match_result_is_ordered_like_variables() -> None:
    t = UriTemplate("{/b:1,a,b}")
    result = t.match("/x/y/xz")
    assert result == {"a": "y", "b": "xz"}
    assert list(result) == ["b", "a"]


# --- Expansion details ----------------------------------------------------------------


def test_scalar_value_types() -> None:
    t = UriTemplate("{a,b,c,d}")
    assert t.expand({"a": True, "b": False, "c": 42, "d": 1.5}) == "true,false,42,1.5"
    assert UriTemplate("{?flag}").expand({"flag": True}) == "?flag=true"


def test_undefined_members_are_skipped() -> None:
    assert UriTemplate("{list}").expand({"list": ["a", None, "b"]}) == "a,b"
    assert UriTemplate("x{.list}").expand({"list": [None]}) == "x"
    assert UriTemplate("{?m*}").expand({"m": {"a": 1, "b": None}}) == "?a=1"
    assert UriTemplate("x{?m}").expand({"m": {"b": None}}) == "x"
    assert UriTemplate("{a,b}").expand({"b": "2"}) == "2"


def test_prefix_ignored_for_composites_and_reserved_keeps_triplets() -> None:
    assert UriTemplate("{list:1}").expand({"list": ["ab", "cd"]}) == "ab,cd"
    assert UriTemplate("{+v}").expand({"v": "a%2Fb%zz"}) == "a%2Fb%25zz"
    assert UriTemplate("{v}").expand({"v": "a%2Fb"}) == "a%252Fb"


def test_dotted_and_encoded_variable_names() -> None:
    t = UriTemplate("{a.b}/{?c%20d}")
    assert t.variables == ("a.b", "c%20d")
    uri = t.expand({"a.b": "x", "c%20d": "y"})
    assert uri == "x/?c%20d=y"
    assert t.match(uri) == {"a.b": "x", "c%20d": "y"}


def test_static_template_and_dunders() -> None:
    t = UriTemplate("static://thing")
    assert t.is_static
    assert t.variables == ()
    assert t.expand({}) == "static://thing"
    assert t.match("static://thing") == {}
    assert t.match("static://other") is None
    d = UriTemplate("d://{x}")
    assert not d.is_static
    assert str(d) == "d://{x}"
    assert repr(d) == "UriTemplate('d://{x}')"
    assert d == UriTemplate("d://{x}")
    assert d != t
    assert d != "d://{x}"
    assert hash(d) == hash(UriTemplate("d://{x}"))
    assert len({d, UriTemplate("d://{x}"), t}) == 2


def test_no_parsing_after_construction(monkeypatch: pytest.MonkeyPatch) -> None:
    t = UriTemplate("s://{a}{?b}")

    def boom(template: str) -> None:
        raise AssertionError("parsed again")

    monkeypatch.setattr(uri_template, "_parse", boom)
    assert t.match(t.expand({"a": "1", "b": "2"})) == {"a": "1", "b": "2"}


# --- Malformed templates --------------------------------------------------------------


@pytest.mark.parametrize(
    ("template", "position"),
    [
        ("{", 0),
        ("abc{def", 3),
        ("a{b}{c", 4),
        ("{}", 0),
        ("x}", 1),
        ("{a}}", 3),
        ("{=x}", 1),
        ("{,x}", 1),
        ("{!x}", 1),
        ("{@x}", 1),
        ("{|x}", 1),
        ("{$x}", 1),
        ("{-a}", 1),
        ("{a b}", 2),
        ("{a.}", 2),
        ("{.a..b}", 3),
        ("{a,}", 3),
        ("{a,,b}", 3),
        ("{%zz}", 1),
        ("{a{b}}", 0),
        ("{a:0}", 2),
        ("{a:01}", 2),
        ("{a:10000}", 2),
        ("{a:}", 2),
        ("{a:b}", 2),
        ("{a*:3}", 2),
        ("{a:3*}", 2),
        ("{a**}", 2),
    ],
)
def test_malformed_templates(template: str, position: int) -> None:
    with pytest.raises(UriTemplateError) as info:
        UriTemplate(template)
    err = info.value
    assert isinstance(err, ValueError)
    assert err.template == template
    assert err.position == position
    assert repr(template) in str(err)
    assert f"position {position}" in str(err)


# --- Safe values: no path traversal through a single-segment variable ---------------


@pytest.mark.parametrize(
    "uri",
    [
        "notes://..%2F..%2Fetc%2Fpasswd",  # '/' decoded
        "notes://..%2f..%2fetc%2fpasswd",
        "notes://a%00b",  # NUL
        "notes://%00",
        "notes://a%5Cb",  # '\\' (a separator on Windows)
        "notes://..%5C..%5Cwin.ini",
        "notes://a%0Ab",  # other C0 controls and DEL
        "notes://a%0D%0Ab",
        "notes://%1B[31m",
        "notes://a%7F",
        "notes://..",  # '.' and '..' as the whole value
        "notes://.",
        "notes://%2E%2E",
        "notes://%2e.",
    ],
)
def test_single_segment_variable_refuses_unsafe_decoded_values(uri: str) -> None:
    assert UriTemplate("notes://{name}").match(uri) is None


@pytest.mark.parametrize(
    ("template", "uri"),
    [
        ("n://x{/name}", "n://x/..%2Fsecret"),
        ("n://x{/name}", "n://x/.."),
        ("n://x{/parts*}", "n://x/a/%2E%2E/b"),
        ("n://x{/parts*}", "n://x/a%2Fb"),
        ("n://x{;name}", "n://x;name=..%2Fsecret"),
        ("n://x{;name}", "n://x;name=.."),
        ("n://x{.ext}", "n://x.a%2Fb"),
        ("n://{items*}", "n://a,..,b"),
        ("n://{name:4}", "n://..%2Fetc"),  # the prefix is a value too
        ("n://{a}/{a:2}", "n://..x/.."),
        ("n://x{?q}", "n://x?q=a%00b"),  # NUL: nowhere
        ("file:///{+path}", "file:///a%00b"),
        ("n://x{#frag}", "n://x#a%00"),
    ],
)
def test_unsafe_values_do_not_match_in_any_form(template: str, uri: str) -> None:
    assert UriTemplate(template).match(uri) is None


def test_safe_values_still_match() -> None:
    t = UriTemplate("notes://{name}")
    assert t.match("notes://a.b") == {"name": "a.b"}
    assert t.match("notes://...") == {"name": "..."}
    assert t.match("notes://..a") == {"name": "..a"}
    assert t.match("notes://caf%C3%A9%20au%20lait") == {"name": "café au lait"}
    assert t.match("notes://%09") is None  # a tab is a control character too
    # The explicit opt-ins keep '/' (and '..': the handler must contain it itself).
    assert UriTemplate("file:///{+path}").match("file:///../etc/passwd") == {
        "path": "../etc/passwd"
    }
    assert UriTemplate("file:///{+path}").match("file:///a%2Fb%0Ac") == {"path": "a/b\nc"}
    assert UriTemplate("s://x{?q}").match("s://x?q=a%2Fb%0A") == {"q": "a/b\n"}


# --- Property tests -------------------------------------------------------------------

OPERATORS = ["", "+", "#", ".", "/", ";", "?", "&"]
NAMED = {";", "?", "&"}
NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,4}", fullmatch=True)
ANY_TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=8)
UNRESERVED = st.text(string.ascii_letters + string.digits + "-._~", max_size=8)
WORD = st.text(string.ascii_letters + string.digits + "-_~", max_size=6)
URI_CHARS = set(string.ascii_letters + string.digits + "-._~:/?#[]@!$&'()*+,;=%")


def _safe_segment(text: str) -> bool:
    return text not in (".", "..") and not any(
        c in "/\\" or ord(c) < 0x20 or c == "\x7f" for c in text
    )


SAFE_TEXT = ANY_TEXT.filter(_safe_segment)


def text_for(op: str) -> st.SearchStrategy[str]:
    """Values for which the operator's expansion is reversible.

    + and # let reserved characters through unencoded, so only unreserved text
    round-trips; '.' is unreserved but is the label separator. Single-segment
    variables take only safe text; query values anything but NUL.
    """
    if op in ("+", "#"):
        return UNRESERVED
    if op == ".":
        return SAFE_TEXT.filter(lambda s: "." not in s)
    if op in ("?", "&"):
        return ANY_TEXT.filter(lambda s: "\x00" not in s)
    return SAFE_TEXT


@given(
    op=st.sampled_from(OPERATORS),
    names=st.lists(NAMES, min_size=1, max_size=3, unique=True),
    data=st.data(),
)
def test_round_trip_single_expression(op: str, names: list[str], data: st.DataObject) -> None:
    t = UriTemplate("{" + op + ",".join(names) + "}")
    values: dict[str, str] = {}
    for name in names:
        # Named operators carry the name, so any subset may be undefined.
        if op in NAMED and data.draw(st.booleans()):
            continue
        values[name] = data.draw(text_for(op))
    assert t.match(t.expand(values)) == values


@given(op=st.sampled_from(OPERATORS), data=st.data())
def test_round_trip_explode(op: str, data: st.DataObject) -> None:
    items = data.draw(st.lists(text_for(op), min_size=1, max_size=4))
    if op in ("", "+"):  # no leading character: [""] expands like undefined
        assume(items != [""])
    t = UriTemplate("{" + op + "list*}")
    assert t.match(t.expand({"list": items})) == {"list": items}


@given(op=st.sampled_from(OPERATORS), n=st.integers(1, 6), data=st.data())
def test_round_trip_prefix(op: str, n: int, data: st.DataObject) -> None:
    value = data.draw(text_for(op))
    if op in ("", "/", ";"):  # single-segment: a prefix that is "." or ".." never matches
        assume(value[:n] not in (".", ".."))
    t = UriTemplate(f"{{{op}v:{n}}}")
    assert t.match(t.expand({"v": value})) == {"v": value[:n]}


@st.composite
def composite_templates(draw: st.DrawFn) -> tuple[str, dict[str, str]]:
    """Multi-part templates whose expressions are separated by literals."""
    names = iter(draw(st.lists(NAMES, min_size=16, max_size=16, unique=True)))
    values: dict[str, str] = {}
    parts: list[str] = []
    count = draw(st.integers(1, 4))
    for i in range(count):
        literal = draw(st.text(string.ascii_lowercase, max_size=3))
        if draw(st.booleans()):
            parts.append(literal or "p")
            continue
        # A {+x} value may contain '/', so only the last part may be one: before an
        # optional-prefix expression ({/y} with y="") it would be genuinely ambiguous
        # ("s://{+a}/{/b}" expands a="", b="" and a="/" alike).
        op = draw(st.sampled_from(["", ".", "/", ";"] + (["+"] if i == count - 1 else [])))
        group = [next(names) for _ in range(draw(st.integers(1, 2)))]
        parts.append(literal + "{" + op + ",".join(group) + "}")
        for name in group:
            if op != ";" or draw(st.booleans()):
                values[name] = draw(WORD)
    template = "s://" + "/".join(parts)
    if draw(st.booleans()):
        query = [next(names) for _ in range(draw(st.integers(1, 3)))]
        template += "{?" + ",".join(query) + "}"
        values[query[0]] = draw(WORD)  # keeps a following {&...} after a '?'
        if draw(st.booleans()):
            cont = [next(names) for _ in range(draw(st.integers(1, 2)))]
            template += "{&" + ",".join(cont) + "}"
            query += cont
        for name in query[1:]:
            if draw(st.booleans()):
                values[name] = draw(WORD)
    if draw(st.booleans()):
        fragment = next(names)
        template += "{#" + fragment + "}"
        values[fragment] = draw(WORD)
    return template, values


@given(composite_templates())
def test_round_trip_composite(case: tuple[str, dict[str, str]]) -> None:
    template, values = case
    t = UriTemplate(template)
    assert t.match(t.expand(values)) == values


@given(names=st.lists(NAMES, min_size=1, max_size=4, unique=True), data=st.data())
def test_query_parameters_in_any_order_with_extras(names: list[str], data: st.DataObject) -> None:
    t = UriTemplate("q://x{?" + ",".join(names) + "}")
    values = {name: data.draw(text_for("?")) for name in names}
    pairs = t.expand(values).removeprefix("q://x?").split("&")
    pairs = data.draw(st.permutations(pairs))
    pairs.insert(data.draw(st.integers(0, len(pairs))), "unknown_param=1")
    assert t.match("q://x?" + "&".join(pairs)) == values


@given(op=st.sampled_from(OPERATORS), value=ANY_TEXT, items=st.lists(ANY_TEXT, max_size=3))
def test_expansion_only_emits_uri_characters(op: str, value: str, items: list[str]) -> None:
    t = UriTemplate("{" + op + "a,b*,c}")
    uri = t.expand({"a": value, "b": items, "c": dict(zip(items, items, strict=True))})
    assert set(uri) <= URI_CHARS


@given(st.text("{}abc:*,.+#/;?&=!%0129 é", max_size=20), st.text(max_size=20))
def test_parser_and_matcher_are_total(template: str, uri: str) -> None:
    try:
        t = UriTemplate(template)
    except UriTemplateError as err:
        assert 0 <= err.position <= len(template)
        return
    t.expand({"a": "1", "b": ["2", "3"], "c": {"k": "v"}})
    result = t.match(uri)
    assert result is None or set(result) <= set(t.variables)
    assert t.match(t.expand({})) is not None


@given(
    op=st.sampled_from(["", ".", "/", ";"]),
    explode=st.booleans(),
    tail=st.text("ab./\\%2F5Ce0A7D", max_size=16),
)
def test_single_segment_values_are_always_safe(op: str, explode: bool, tail: str) -> None:
    t = UriTemplate("s://x{" + op + "v" + ("*" if explode else "") + "}")
    lead = {"": "", ".": ".", "/": "/", ";": ";v="}[op]
    found = t.match("s://x" + lead + tail)
    if found is None or "v" not in found:
        return
    value = found["v"]
    for item in [value] if isinstance(value, str) else value:
        assert _safe_segment(item), (tail, item)


@st.composite
def adjacent_templates(draw: st.DrawFn) -> str:
    """Templates with expressions packed between literals, to stress _close_run."""
    parts = ["s:"]
    for _ in range(draw(st.integers(1, 6))):
        if draw(st.booleans()):
            parts.append(draw(st.sampled_from(["-", ".", "x", ",", "/", "?", "#", "a=1", "é"])))
            continue
        op = draw(st.sampled_from(["", "", ".", ";", "/", "?", "&", "#", "+"]))
        spec = draw(st.sampled_from(["a", "b", "c", "a:2", "b*"]))
        names = [spec] + (["d"] if draw(st.booleans()) else [])
        parts.append("{" + op + ",".join(names) + "}")
    return "".join(parts)


@given(template=adjacent_templates(), data=st.data())
def test_backtracking_guard_preserves_results(template: str, data: st.DataObject) -> None:
    guarded = UriTemplate(template)
    with patch.object(uri_template, "_close_run", lambda body, *args: body):
        plain = UriTemplate(template)
    values = {n: data.draw(st.text("ab-.,", max_size=3)) for n in "abcd"}
    uri = data.draw(
        st.one_of(
            st.just(guarded.expand(values)),
            st.text("ab-.,;=/?#x%2C", max_size=14).map(lambda u: "s:" + u),
        )
    )
    assert guarded.match(uri) == plain.match(uri)


@pytest.mark.parametrize(
    ("template", "uri"),
    [
        ("x://{a}-{b}-{c}", "x://" + "-" * 3000 + "/"),
        ("x://{a}-{b}-{c}z", "x://" + "-" * 3000),
        ("x://{a}-{b}-{c}", "x://" + "-" * 3000 + ","),
        ("x://{a}.{b}.{c}{?q}", "x://" + "." * 3000 + "#"),
        ("x://{a}-{b}-{c}/end", "x://" + "-" * 3000 + "/nope"),
    ],
)
def test_adjacent_expressions_fail_fast(template: str, uri: str) -> None:
    t = UriTemplate(template)
    start = time.perf_counter()
    assert t.match(uri) is None
    assert time.perf_counter() - start < 5.0  # unguarded, this takes minutes


def test_hostile_uris_are_bounded_for_ambiguous_templates() -> None:
    import time

    from mcpkit.server.uri_template import MAX_AMBIGUOUS_MATCH_LENGTH, MAX_MATCH_LENGTH

    ambiguous = UriTemplate("x://{+a}/{+b}/{+c}.txt")
    assert ambiguous.max_match_length == MAX_AMBIGUOUS_MATCH_LENGTH
    assert ambiguous.match("x://d/e/f.txt") == {"a": "d", "b": "e", "c": "f"}
    assert ambiguous.match("x://" + "/" * 5000) is None  # refused by length, instantly
    worst = "x://" + "/" * (MAX_AMBIGUOUS_MATCH_LENGTH - 4)
    started = time.perf_counter()
    assert ambiguous.match(worst) is None
    # Generous bound: the unbounded version took ~3 s at 1000 characters.
    assert time.perf_counter() - started < 2.0
    plain = UriTemplate("file:///{+path}")
    assert plain.max_match_length == MAX_MATCH_LENGTH
    assert plain.match("file:///" + "a/" * 4000) == {"path": "a/" * 4000}
