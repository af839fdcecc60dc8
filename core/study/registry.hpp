// The study kinds: the one table of what each kind brings (core/study/registry.cpp), and what
// the layers below are handed from it (the config reader's StudyKinds, the workers'
// Measurements, the report's KindReports).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "config/study_config.hpp"
#include "report/reports.hpp"
#include "study/kind.hpp"
#include "train/measurement.hpp"

namespace induct {

// The kinds' names, in the order their reports appear.
const std::vector<std::string>& study_kinds();
// The kind `kind` with default settings; nullptr for an unknown kind.
std::shared_ptr<const Study> make_study(const std::string& kind);

// What the config reader needs of the kinds.
const StudyKinds& study_kind_reader();
// Every kind's measurements (what a worker may be asked to take).
const Measurements& study_measurements();
// Every kind's report, in the table's order.
std::vector<KindReport> study_reports();

// A study file (or text: tests) read with the kinds of the table.
StudyConfig load_study(const std::string& file, const std::vector<std::string>& overrides);
StudyConfig load_study_text(const std::string& text, const std::string& name,
                            const std::vector<std::string>& overrides = {});

}  // namespace induct
