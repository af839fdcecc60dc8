// Any finite group or monoid from its multiplication (Cayley) table, given in the study file:
//   task: {name: cayley, table: [[0, 1, 2], [1, 2, 0], [2, 0, 1]]}   # Z_3
// Elements are 0..n-1; actions and states are the elements, the initial state is the identity,
// and action a in state s gives s * a, the entry at row s, column a (the state is the product
// of the actions so far, the latest on the right). The table is checked before anything runs:
// closure (square, entries in 0..n-1), an identity, associativity, and for a group inverses.
#include <induct/plugin.hpp>
#include <induct/task.hpp>
#include <string>
#include <vector>

namespace {

constexpr long kMaxElements = 256;  // associativity is checked over all n^3 triples

class Cayley final : public induct::Task {
 public:
  Cayley(std::vector<std::vector<long>> table, int64_t identity)
      : table_(std::move(table)), identity_(identity) {}
  int64_t num_actions() const override { return static_cast<int64_t>(table_.size()); }
  int64_t num_states() const override { return static_cast<int64_t>(table_.size()); }
  int64_t initial_state() const override { return identity_; }
  int64_t step(int64_t state, int64_t action) const override { return table_[state][action]; }

 private:
  std::vector<std::vector<long>> table_;
  int64_t identity_;
};

std::string entry(size_t row, size_t column) {
  return "table[" + std::to_string(row) + "][" + std::to_string(column) + "]";
}

std::unique_ptr<induct::Task> make(const induct::TaskContext& ctx) {
  const auto& o = ctx.options;
  o.get<std::string>("label", "");  // a name for tables and figures, e.g. Q8
  const auto t = o.require_table<long>("table");
  const std::string structure = o.get<std::string>("structure", "group");
  if (structure != "group" && structure != "monoid")
    o.fail("structure", "must be group or monoid, not '" + structure + "'");
  const size_t n = t.size();
  if (n < 2) o.fail("table", "needs at least 2 elements (one element has nothing to track)");
  if (n > kMaxElements)
    o.fail("table", "has " + std::to_string(n) + " rows; at most " + std::to_string(kMaxElements) +
                        " elements");
  for (size_t a = 0; a < n; ++a) {
    if (t[a].size() != n)
      o.fail("table", "row " + std::to_string(a) + " has " + std::to_string(t[a].size()) +
                          " entries; a table of " + std::to_string(n) + " elements has " +
                          std::to_string(n) + " in every row");
    for (size_t b = 0; b < n; ++b)
      if (t[a][b] < 0 || t[a][b] >= static_cast<long>(n))
        o.fail("table", "not closed: " + entry(a, b) + " = " + std::to_string(t[a][b]) +
                            " is not an element (0.." + std::to_string(n - 1) + ")");
  }
  long identity = -1;
  for (size_t e = 0; e < n && identity < 0; ++e) {
    bool is_identity = true;
    for (size_t x = 0; x < n && is_identity; ++x)
      is_identity = t[e][x] == static_cast<long>(x) && t[x][e] == static_cast<long>(x);
    if (is_identity) identity = static_cast<long>(e);
  }
  if (identity < 0)
    o.fail("table", "has no identity element (no e with e * x = x * e = x for every x)");
  for (size_t a = 0; a < n; ++a)
    for (size_t b = 0; b < n; ++b)
      for (size_t c = 0; c < n; ++c)
        if (t[t[a][b]][c] != t[a][t[b][c]])
          o.fail("table", "not associative: (" + std::to_string(a) + " * " + std::to_string(b) +
                              ") * " + std::to_string(c) + " = " + std::to_string(t[t[a][b]][c]) +
                              " but " + std::to_string(a) + " * (" + std::to_string(b) + " * " +
                              std::to_string(c) + ") = " + std::to_string(t[a][t[b][c]]) + " (" +
                              entry(a, b) + " = " + std::to_string(t[a][b]) + ", " + entry(b, c) +
                              " = " + std::to_string(t[b][c]) + ")");
  if (structure == "group")
    for (size_t a = 0; a < n; ++a) {
      bool inverse = false;
      for (size_t b = 0; b < n && !inverse; ++b)
        inverse = t[a][b] == identity && t[b][a] == identity;
      if (!inverse)
        o.fail("table", "not a group: element " + std::to_string(a) +
                            " has no inverse (set structure: monoid for a monoid)");
    }
  return std::make_unique<Cayley>(t, identity);
}

void register_components(induct::Registrar& registrar) {
  registrar.add_task(
      "cayley",
      "any finite group or monoid from its multiplication table (options: table (rows), "
      "structure: group | monoid, label)",
      make);
}

}  // namespace

INDUCT_PLUGIN("cayley", "1.0.0", register_components)
