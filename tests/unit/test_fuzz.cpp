// A bounded mutation fuzzer for the two readers of files a user or a disk can damage: the study
// reader (load_study_text, as `induct validate` and `run` read a study file) and the status
// reader (`induct status`). Seeds: the repository's study files and tests/fixtures/fuzz; each
// iteration mutates one (byte flips, YAML punctuation inserted, ranges deleted or duplicated,
// truncation, two seeds spliced, a document marker, directive, anchor or tag put first) with a
// fixed seed, so a run is reproducible. An input must be
// read or refused with a std::exception whose message is one non-empty line naming the file;
// a crash, a hang (5 s), an allocation over the memory limit, or a message naming no file fails
// the test, and the input is written to FUZZ_FAILURE_DIR (default /tmp) for the regression
// corpus. Iterations: FUZZ_ITERATIONS per target (default 4000, about 20 s each on 2 cores).
#define BOOST_TEST_MODULE fuzz
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <new>
#include <random>

#include "exec/status.hpp"
#include "study/registry.hpp"
#include "support.hpp"
#include "util/process.hpp"

using namespace induct;
namespace fs = std::filesystem;

namespace {

// The input under test, for the signal handlers (written before each call).
char g_failure_path[512] = {0};
std::string g_input;

void save_input(const char* why) {
  const int fd = ::open(g_failure_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) {
    ssize_t written = ::write(fd, g_input.data(), g_input.size());
    (void)written;
    ::close(fd);
  }
  const char* prefix = "test_fuzz: ";
  ssize_t w = ::write(2, prefix, std::strlen(prefix));
  w = ::write(2, why, std::strlen(why));
  w = ::write(2, "; the input is in ", 18);
  w = ::write(2, g_failure_path, std::strlen(g_failure_path));
  w = ::write(2, "\n", 1);
  (void)w;
}

void on_fatal(int signal) {
  save_input(signal == SIGALRM ? "an input ran over 5 s" : "an input crashed the reader");
  ::_exit(3);
}

struct Setup {
  Setup() {
    configure_process(1);
    const char* dir = std::getenv("FUZZ_FAILURE_DIR");
    const std::string path =
        std::string(dir ? dir : "/tmp") + "/induct-fuzz-failure-" + std::to_string(::getpid());
    std::strncpy(g_failure_path, path.c_str(), sizeof g_failure_path - 1);
    // The memory limit: what the process maps now and 2 GiB more.
    std::ifstream statm("/proc/self/statm");
    unsigned long pages = 0;
    statm >> pages;
    const rlim_t limit = pages * static_cast<rlim_t>(::sysconf(_SC_PAGESIZE)) + (rlim_t{2} << 30);
    const rlimit r{limit, limit};
    ::setrlimit(RLIMIT_AS, &r);
  }
};
BOOST_TEST_GLOBAL_FIXTURE(Setup);

std::vector<std::string> seeds(const std::vector<fs::path>& folders, const std::string& ext) {
  std::vector<std::string> out;
  for (const auto& folder : folders)
    for (const auto& entry : fs::recursive_directory_iterator(folder))
      if (entry.is_regular_file() && entry.path().extension() == ext)
        out.push_back(test::read(entry.path().string()));
  std::sort(out.begin(), out.end());  // the directory order is the filesystem's
  return out;
}

std::string mutate(const std::vector<std::string>& corpus, std::mt19937_64& rng) {
  auto pick = [&](size_t n) { return n == 0 ? size_t{0} : static_cast<size_t>(rng() % n); };
  std::string s = corpus[pick(corpus.size())];
  static const std::string kPunctuation = ",:{}[]-&*!|>'\"#%@`? \n\t\\0x.e+";
  const int edits = 1 + static_cast<int>(pick(4));
  for (int e = 0; e < edits; ++e) {
    const size_t at = pick(s.size() + 1);
    switch (pick(8)) {
      case 0:
        if (!s.empty()) s[pick(s.size())] ^= static_cast<char>(1 << pick(8));
        break;
      case 1:
        s.insert(at, 1, kPunctuation[pick(kPunctuation.size())]);
        break;
      case 2:
        s.erase(at, pick(16));
        break;
      case 3:
        s.insert(at, s.substr(pick(s.size() + 1), pick(64)));
        break;
      case 4:
        s.resize(at);
        break;
      case 5: {
        const std::string& other = corpus[pick(corpus.size())];
        s = s.substr(0, at) + other.substr(std::min(other.size(), pick(other.size() + 1)));
        break;
      }
      case 6: {  // what comes before a document's first node, and the token after it
        static const char* kPrefixes[] = {"---\n",  "--- ", "%YAML 1.2\n---\n", "...\n", "&a ",
                                          "!!map ", "! ",   "study: x\n---\n"};
        s.insert(0, std::string(kPrefixes[pick(8)]) +
                        (pick(2) ? std::string(1, kPunctuation[pick(kPunctuation.size())]) : ""));
        break;
      }
      default:
        s.insert(at, std::string(1 + pick(40), kPunctuation[pick(kPunctuation.size())]));
    }
  }
  return s;
}

size_t iterations() {
  const char* text = std::getenv("FUZZ_ITERATIONS");
  return text ? std::strtoul(text, nullptr, 10) : 4000;
}

// Runs `read` on `input` under the limits; true when it was refused. `name` must be in the
// message.
bool refused_within_limits(const std::string& input, size_t iteration, const std::string& name,
                           const std::function<void(const std::string&)>& read) {
  // Ours, not Boost.Test's (installed around each test case): they save the input.
  for (int s : {SIGSEGV, SIGBUS, SIGFPE, SIGABRT, SIGILL, SIGALRM}) ::signal(s, on_fatal);
  g_input = input;
  bool refused = false;
  ::alarm(5);
  try {
    read(g_input);
  } catch (const std::bad_alloc&) {
    save_input("an input exhausted the memory limit");
    BOOST_FAIL("iteration " << iteration << ": std::bad_alloc");
  } catch (const std::exception& e) {
    refused = true;
    const std::string message = e.what();
    if (message.empty() || message.find(name) == std::string::npos ||
        message.find('\n') != std::string::npos) {
      save_input("a message is not one line naming the file");
      BOOST_FAIL("iteration " << iteration << ": the message '" << message
                              << "' is not one line naming " << name);
    }
  }
  ::alarm(0);
  return refused;
}

// Runs `read` on mutated inputs; returns the number refused.
size_t fuzz(const std::vector<std::string>& corpus, uint64_t seed, const std::string& name,
            const std::function<void(const std::string&)>& read) {
  BOOST_REQUIRE(!corpus.empty());
  std::mt19937_64 rng(seed);
  size_t refused = 0;
  for (size_t i = 0; i < iterations(); ++i)
    refused += refused_within_limits(mutate(corpus, rng), i, name, read) ? 1 : 0;
  return refused;
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_study_reader_reads_or_refuses_any_mutation_of_a_study_file) {
  const fs::path source = INDUCT_SOURCE_DIR;
  const auto corpus = seeds({source / "configs", source / "tests/fixtures/studies"}, ".yaml");
  const size_t refused = fuzz(corpus, 1, "study.yaml",
                              [](const std::string& text) { load_study_text(text, "study.yaml"); });
  BOOST_TEST_MESSAGE(refused << " of " << iterations() << " mutated study files refused");
  BOOST_TEST(refused > 0);  // the mutations reach the error paths
}

// Each input that once made yaml-cpp allocate without bound (gigabytes in seconds), refused
// under the memory limit and the alarm.
BOOST_AUTO_TEST_CASE(the_known_runaway_inputs_are_refused_within_the_limits) {
  size_t i = 0;
  for (const char* text :
       {",\n", "---\n,\n", "--- ,\n", "study: train\n---\n,\n", "%YAML 1.2\n---\n,\n",
        "study: train\n...\n,\n", "&a ,\n", "!!map ,\n", "! ,\n", "[1], 2\n", "{a: 1}\n, b\n",
        "\"a\", b\n", "  a: 1\n, b\n", "a\n#\n,\n", "---\n&a !!map ,\n"})
    BOOST_TEST(refused_within_limits(
                   text, i++, "study.yaml",
                   [](const std::string& input) { load_study_text(input, "study.yaml"); }),
               text);
}

BOOST_AUTO_TEST_CASE(the_status_reader_reads_or_refuses_any_mutation_of_a_status_file) {
  const fs::path source = INDUCT_SOURCE_DIR;
  const auto corpus = seeds({source / "tests/fixtures/fuzz"}, ".yaml");
  const std::string dir = test::temp_dir("fuzz-status");
  const size_t refused = fuzz(corpus, 2, "status.yaml", [&](const std::string& text) {
    std::ofstream(dir + "/status.yaml", std::ios::binary | std::ios::trunc) << text;
    describe_status(dir);
  });
  BOOST_TEST_MESSAGE(refused << " of " << iterations() << " mutated status files refused");
  BOOST_TEST(refused > 0);
  test::run_command("rm -rf '" + dir + "'");
}
