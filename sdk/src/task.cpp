#include "induct/task.hpp"

#include "induct/plugin.hpp"

namespace induct {

// Out-of-line key functions: the vtables and type_info of the SDK's interfaces live in
// libinduct_sdk.so, so RTTI and exceptions work the same in the host and in every plugin.
Task::~Task() = default;
Registrar::~Registrar() = default;

bool Task::allows(int64_t, int64_t) const { return true; }
std::string Task::action_name(int64_t action) const { return std::to_string(action); }
std::string Task::state_name(int64_t state) const { return std::to_string(state); }

}  // namespace induct
