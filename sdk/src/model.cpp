#include "induct/model.hpp"

namespace induct {

// Out-of-line key function (see task.cpp).
SequenceModel::~SequenceModel() = default;

}  // namespace induct
