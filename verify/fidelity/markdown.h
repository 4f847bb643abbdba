// What the differential tables of verify/fidelity/ write alike: a table cell of free text, and the matrix
// of one side's verdict classes against the other's.
#pragma once

#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

namespace ppspec::fidelity {

// One line, no '|', at most 160 characters.
std::string md_cell(std::string s);
// Rows: the first of each pair; columns: the second; cells: how many pairs.
void write_class_matrix(std::ostream& md, const std::string& corner,
                        const std::vector<std::pair<std::string, std::string>>& pairs);

}  // namespace ppspec::fidelity
