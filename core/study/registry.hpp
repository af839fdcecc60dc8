// The study kinds: the one table of what each kind brings (core/study/registry.cpp), and what
// the layers below are handed from it (the workers' Measurements, the store's OutcomeTables,
// the report's KindReports); load_study reads a study file with its kind.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "config/study_config.hpp"
#include "report/reference.hpp"
#include "report/reports.hpp"
#include "store/store.hpp"
#include "study/kind.hpp"
#include "train/measurement.hpp"

namespace induct {

// The kinds' names, in the order their reports appear.
const std::vector<std::string>& study_kinds();

// Every kind's measurements (what a worker may be asked to take).
const Measurements& study_measurements();
// The tables of every kind that keeps its own (for Store), in the table's order.
std::vector<OutcomeTables> study_outcome_tables();
// Every kind's report, in the table's order.
std::vector<KindReport> study_reports();
// The metrics of published values the kinds' reports compare (read_reference).
std::vector<ReferenceMetric> study_reference_metrics();

// A study file (or text: tests) read with the kinds of the table.
StudyConfig load_study(const std::string& file, const std::vector<std::string>& overrides);
StudyConfig load_study_text(const std::string& text, const std::string& name,
                            const std::vector<std::string>& overrides = {});

}  // namespace induct
