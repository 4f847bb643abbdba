// What a scenario says, comments and layout aside (scenario/toml_content.h): the hash a trace records
// so that a commented or re-spaced scenario still configures its check and replay.
#include <gtest/gtest.h>

#include "scenario/toml_content.h"

namespace ppspec::testing {
namespace {

TEST(TomlContent, CommentsTrailingBlanksAndEmptyLinesAreNotContent) {
  const std::string a = "kind = \"program\"\nranks = 2\n";
  const std::string b = "# mine\n\nkind = \"program\"   # the kind\nranks = 2  \n\n";
  EXPECT_EQ(scenario::toml_content(b), a);
  EXPECT_EQ(scenario::toml_content_hash(a), scenario::toml_content_hash(b));
  EXPECT_NE(scenario::toml_content_hash(a), scenario::toml_content_hash("kind = \"program\"\nranks = 3\n"));
}

TEST(TomlContent, AHashInsideAStringIsContent) {
  EXPECT_EQ(scenario::toml_content("label = \"a#b\" # c\n"), "label = \"a#b\"\n");
  EXPECT_EQ(scenario::toml_content("label = 'a#b'\n"), "label = 'a#b'\n");
  EXPECT_EQ(scenario::toml_content("label = \"a\\\"#b\"\n"), "label = \"a\\\"#b\"\n");  // an escaped quote
  // A multi-line string keeps its lines, empty and '#' ones too.
  const std::string multi = "description = \"\"\"\n# not a comment\n\nend\"\"\" # a comment\n";
  EXPECT_EQ(scenario::toml_content(multi), "description = \"\"\"\n# not a comment\n\nend\"\"\"\n");
  EXPECT_EQ(scenario::toml_content("d = '''\n#x\n'''\n"), "d = '''\n#x\n'''\n");
}

}  // namespace
}  // namespace ppspec::testing
