// kvx-test-labels: unit serial
#include "json/json_reader.h"

#include <catch2/catch.hpp>
#include <limits>
#include <nlohmann/json.hpp>

using kvx::StatusCode;
using nlohmann::json;
using namespace kvx::jsonio;

TEST_CASE("jsonTypeName uses the words of the error messages") {
  CHECK(jsonTypeName(json(nullptr)) == "null");
  CHECK(jsonTypeName(json(-1)) == "negative integer");
  CHECK(jsonTypeName(json(1)) == "unsigned integer");
  CHECK(jsonTypeName(json(1u)) == "unsigned integer");
  CHECK(jsonTypeName(json(1.0)) == "float");
  CHECK(jsonTypeName(json("s")) == "string");
  CHECK(jsonTypeName(json::array()) == "array");
  CHECK(jsonTypeName(json::object()) == "object");
  CHECK(jsonTypeName(json(false)) == "boolean");
}

TEST_CASE("JsonReader checks types and ranges") {
  const json doc = {
      {"small", 5},        {"neg", -5},          {"big", std::numeric_limits<std::uint64_t>::max()},
      {"text", "abc"},     {"flag", true},       {"hex", "00ff"},
      {"list", {1, 2, 3}}, {"child", {{"x", 1}}}};
  auto reader = JsonReader::object(doc, "doc");
  REQUIRE(reader.isOk());
  CHECK(*reader->unsignedInteger("small", 0, 5) == 5);
  CHECK(reader->unsignedInteger("small", 6, 9).status().message() ==
        "doc.small: expected unsigned integer in [6, 9], got 5");
  CHECK(*reader->unsignedInteger("big") == std::numeric_limits<std::uint64_t>::max());
  CHECK(*reader->integer("neg", -10, 10) == -5);
  CHECK(reader->integer("neg", 0, 10).status().message() ==
        "doc.neg: expected integer in [0, 10], got -5");
  CHECK(reader->integer("big", -1, 10).status().message() ==
        "doc.big: expected integer in [-1, 10], got 18446744073709551615");
  CHECK(reader->integer("text", -1, 10).status().message() ==
        "doc.text: expected integer in [-1, 10], got string");
  CHECK(*reader->string("text", 3) == "abc");
  CHECK(reader->string("text", 2).status().message() ==
        "doc.text: expected string of at most 2 bytes, got 3 bytes");
  CHECK_FALSE(reader->optionalString("absent", 5)->has_value());
  CHECK(**reader->optionalString("text", 5) == "abc");
  CHECK(*reader->boolean("flag"));
  CHECK_FALSE(reader->optionalBoolean("absent")->has_value());
  CHECK(**reader->optionalBoolean("flag"));
  CHECK(reader->optionalBoolean("text").status().message() ==
        "doc.text: expected boolean, got string");
  CHECK(*reader->hexBytes("hex", 2) == std::vector<std::uint8_t>{0x00, 0xff});
  CHECK(reader->hexBytes("hex", 1).status().code() == StatusCode::kProtocolError);
  CHECK((*reader->array("list", 3))->size() == 3);
  CHECK(reader->array("list", 2).status().message() ==
        "doc.list: expected array of at most 2 items, got 3 items");
  CHECK(reader->child("child")->path() == "doc.child");
  CHECK(reader->child("list").status().message() == "doc.list: expected object, got array");
  CHECK(reader->boolean("missing").status().message() == "doc.missing: missing (expected boolean)");
}

TEST_CASE("helpers: hex, quoting, dumping invalid UTF-8") {
  CHECK(toHex({0x00, 0x0f, 0xa0, 0xff}) == "000fa0ff");
  CHECK(quoteForError("ok") == "'ok'");
  CHECK(quoteForError("a\nb'") == "'a\\x0ab\\x27'");
  CHECK(quoteForError("abcdef", 3) == "'abc'...");
  const json bad = std::string("\xff\xfe");
  CHECK_NOTHROW(dumpJson(bad));
  CHECK(parseJson(dumpJson(bad), "dumped").isOk());
}

TEST_CASE("utf8Prefix cuts at a character and never grows past the limit") {
  CHECK(utf8Prefix("plain", 100) == "plain");
  CHECK(utf8Prefix("plain", 3) == "pla");
  CHECK(utf8Prefix("", 0).empty());
  // "é" is two bytes, "€" three, "😀" four: a cut never splits one.
  CHECK(utf8Prefix("a\xc3\xa9", 2) == "a");
  CHECK(utf8Prefix("a\xc3\xa9", 3) == "a\xc3\xa9");
  CHECK(utf8Prefix("\xe2\x82\xac\xe2\x82\xac", 5) == "\xe2\x82\xac");
  CHECK(utf8Prefix("\xf0\x9f\x98\x80", 4) == "\xf0\x9f\x98\x80");
  // Bytes that are not UTF-8 become one '?' each: stray continuation bytes, a truncated
  // character, an overlong form, a surrogate, a code point above U+10FFFF.
  CHECK(utf8Prefix("\x80\xff", 10) == "??");
  CHECK(utf8Prefix("x\xe2\x82", 10) == "x??");
  CHECK(utf8Prefix("\xc0\xaf", 10) == "??");
  CHECK(utf8Prefix("\xed\xa0\x80", 10) == "???");
  CHECK(utf8Prefix("\xf4\x90\x80\x80", 10) == "????");
  // Whatever comes out is a string a peer's reader accepts within the limit.
  const std::string messy = std::string(1000, '\xff') + "\xe2\x82\xac";
  const std::string cut = utf8Prefix(messy, 1001);
  CHECK(cut.size() <= 1001);
  const auto parsed = parseJson(dumpJson(json{{"s", cut}}), "cut");
  REQUIRE(parsed.isOk());
  CHECK((*parsed)["s"].get<std::string>() == cut);
}

TEST_CASE("parseJson refuses documents of more values than any message, before parsing") {
  // A 15 MiB frame of "{}," took an agent from 50 to 413 MB resident.
  std::string many = "[";
  for (std::size_t i = 0; i <= kMaxJsonValues; ++i) many += "{},";
  many += "{}]";
  auto refused = parseJson(many, "hello payload");
  REQUIRE_FALSE(refused.isOk());
  CHECK(refused.status().code() == StatusCode::kProtocolError);
  CHECK_THAT(refused.status().message(),
             Catch::Contains("hello payload holds more than 1048576 values"));
  // Commas and brackets inside strings are not values.
  const std::string text = "[\"" + std::string(2 * kMaxJsonValues, ',') + "\"]";
  CHECK(parseJson(text, "one string").isOk());
  // Many values below the bound parse.
  std::string numbers = "[";
  for (int i = 0; i < 100000; ++i) numbers += std::to_string(i) + ",";
  numbers += "0]";
  auto parsed = parseJson(numbers, "block list");
  REQUIRE(parsed.isOk());
  CHECK(parsed->size() == 100001);
}
