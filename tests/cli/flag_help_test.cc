// SPDX-License-Identifier: BSD-3-Clause
// skbnfd's --help by topic and its command-line check (server/daemon/flag_help.h,
// command_line.h), in a binary that registers every flag skbnfd registers (skbnfd_objects and the
// control plane's flags) plus one planted flag that no topic names: the planted flag must be the
// only one without a topic, so a flag added to skbnfd without a topic line fails here.
#include "server/daemon/flag_help.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "server/control/control_plane.h"
#include "server/daemon/command_line.h"

ABSL_FLAG(bool, cli_test_planted_flag, false, "Planted by tests/cli: no topic names it.");

namespace skbnf::control {
namespace {

constexpr char kPlanted[] = "cli_test_planted_flag";

// How many lines of `help` introduce `dashed` ("  --name" or "  --name=VALUE").
int Headings(const std::string& help, const std::string& dashed) {
  int n = 0;
  for (absl::string_view line : absl::StrSplit(help, '\n')) {
    if (line == absl::StrCat("  ", dashed) ||
        absl::StartsWith(line, absl::StrCat("  ", dashed, "=")))
      ++n;
  }
  return n;
}

absl::StatusOr<HelpRequest> Check(std::vector<std::string> args) {
  args.insert(args.begin(), "skbnfd");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  return CheckCommandLine(static_cast<int>(argv.size()), argv.data());
}

TEST(FlagTopics, ThePlantedFlagIsTheOnlyOneWithoutATopic) {
  // A new skbnfd flag without a line in flag_help.cc's table shows up here beside the plant.
  EXPECT_EQ(FlagsWithoutTopic(), std::vector<std::string>{kPlanted});
}

TEST(FlagTopics, EveryTopicLineNamesARegisteredFlag) {
  // A call, as in skbnfd.cc, links control_flags.o out of skbnf_control's archive: the control
  // plane's flags are registered in this binary as in skbnfd.
  EXPECT_EQ(OptionsFromFlags().listen, "127.0.0.1:50051");
  EXPECT_EQ(TopicsWithoutFlag(), std::vector<std::string>{});
}

TEST(FlagTopics, FullHelpListsEveryFlagExactlyOnce) {
  const std::string full = FlagsHelp("usage", true);
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    EXPECT_EQ(Headings(full, Dashed(name)), 1) << name;
  }
  // The plant is listed, under the heading that says it has no topic.
  const size_t other = full.find("\nother flags (no topic yet):\n");
  ASSERT_NE(other, std::string::npos) << full;
  EXPECT_GT(full.find(Dashed(kPlanted)), other);
}

TEST(FlagTopics, ShortHelpLeavesOutTheTestHooksOnly) {
  const std::string help = FlagsHelp("usage", false);
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    const bool hidden = absl::StartsWith(name, "test_") || name == "flagfile" ||
                        name == "fromenv" || name == "tryfromenv" || name == "undefok";
    EXPECT_EQ(Headings(help, Dashed(name)), hidden ? 0 : 1) << name;
  }
  EXPECT_TRUE(absl::StartsWith(help, "usage\n"));
  EXPECT_FALSE(absl::StrContains(help, "Flags from"));
  EXPECT_FALSE(absl::StrContains(help, ".cc")) << "a source file named in --help";
}

TEST(FlagTopics, PlaceholdersAndDashes) {
  EXPECT_EQ(Dashed("pool_ops"), "--pool-ops");
  EXPECT_EQ(Placeholder("mode"), "io|mac|l3");
  EXPECT_EQ(Placeholder("colour"), "");
  EXPECT_EQ(Placeholder(kPlanted), "");  // not in the table: boolean, no value
  EXPECT_NE(FlagsHelp("", true).find("  --mode=io|mac|l3\n"), std::string::npos);
}

TEST(CommandLine, HelpFlagsAreAnsweredAndWinOverBadFlags) {
  EXPECT_EQ(*Check({}), HelpRequest::kNone);
  EXPECT_EQ(*Check({"--help"}), HelpRequest::kShort);
  EXPECT_EQ(*Check({"-h"}), HelpRequest::kShort);
  EXPECT_EQ(*Check({"--helpshort"}), HelpRequest::kShort);
  EXPECT_EQ(*Check({"--help", "--helpfull"}), HelpRequest::kFull);
  EXPECT_EQ(*Check({"--frobnicate", "--help"}), HelpRequest::kShort);
  EXPECT_EQ(*Check({"--", "--help"}), HelpRequest::kNone) << "after --: EAL's arguments";
}

TEST(CommandLine, WellFormedFlagsPass) {
  for (std::vector<std::string> args : std::vector<std::vector<std::string>>{
           {"--pool-ops=skbnf", "--pool_ops=ring_mp_mc", "-mode=l3"},
           {"--mode", "l3", "--burst", "64"},  // absl's "--name value"
           {"--colour", "--nocolour", "--colour=false", "--pool-debug=true"},
           {"--network-status-timeout=2m", "--stats=0.5", "--mbufs=8192"},
           {"--duration=1", "--", "-l", "0-1", "--no-such-eal-flag"},
           {"positional", "-"}}) {
    absl::StatusOr<HelpRequest> r = Check(args);
    ASSERT_TRUE(r.ok()) << absl::StrJoin(args, " ") << ": " << r.status();
    EXPECT_EQ(*r, HelpRequest::kNone);
  }
}

// Each mistake: refused, with what to write.
TEST(CommandLine, BadFlagsAreRefusedWithWhatToWrite) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--no-such-flag"}, "unknown flag --no-such-flag (`skbnfd --help` lists the flags)"},
      {{"--pool-op=skbnf"}, "unknown flag --pool-op; did you mean --pool-ops?"},
      {{"--stratgy=magazine"}, "did you mean --strategy?"},
      {{"--helpon=x"}, "unknown flag --helpon; did you mean --help?"},
      {{"--burst=abc"}, "--burst=abc: 'abc' is not a whole number in range; write --burst=N"},
      {{"--burst=99999999999"}, "is not a whole number in range"},
      {{"--stats=x"}, "'x' is not a number; write --stats=SECONDS"},
      {{"--network-status-timeout=30"}, "'30' is not a duration with a unit, e.g. 30s or 2m"},
      {{"--colour=maybe"}, "'maybe' is not true or false; write --colour or --colour=false"},
      {{"--nocolour=1"}, "--nocolour takes no value; write --colour=false or --colour=true"},
      {{"--mode"}, "--mode needs a value; write --mode=io|mac|l3"},
      {{"--nomode"}, "unknown flag --nomode; did you mean --mode?"},
      {{"--mode=l3", "--burst=x", "--frobnicate"}, "--burst=x:"},  // the first mistake
  };
  for (const auto& [args, want] : cases) {
    absl::StatusOr<HelpRequest> r = Check(args);
    ASSERT_FALSE(r.ok()) << absl::StrJoin(args, " ");
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(absl::StrContains(r.status().message(), want))
        << absl::StrJoin(args, " ") << ": " << r.status().message();
  }
}

TEST(CommandLine, TheCheckSetsNoFlag) {
  ASSERT_TRUE(Check({"--pool-ops=ring_mp_mc", "--burst", "64"}).ok());
  const absl::CommandLineFlag* f = absl::FindCommandLineFlag("pool_ops");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->CurrentValue(), f->DefaultValue());
  EXPECT_EQ(absl::FindCommandLineFlag("burst")->CurrentValue(), "-1");
}

}  // namespace
}  // namespace skbnf::control
