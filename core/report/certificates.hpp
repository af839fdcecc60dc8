// What a model can represent: the (model, task) pairs for which a hand-set construction
// computes the task exactly at L and 4L with Outcome and ACoT supervision
// (tests/unit/test_certificates.cpp; docs/models.md, "What each model can represent"). A
// report marks a cell that was not learned although its model has such a certificate: the
// model can represent the task; training did not find it. Torch-free.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

namespace induct {

// The certificate's test case for a model section and a task section, with a format (its
// name), or "" when there is none (which says nothing against the model).
std::string certificate_for(const YAML::Node& model, const YAML::Node& task,
                            const std::string& format);

// The mark after a not-learned cell whose model has a certificate, and its legend.
extern const std::string kRepresentableMark;
extern const std::string kRepresentableLegend;

}  // namespace induct
