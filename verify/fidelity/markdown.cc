#include "verify/fidelity/markdown.h"

#include <map>
#include <ostream>

namespace ppspec::fidelity {

std::string md_cell(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '|') c = ' ';
  return s.size() > 160 ? s.substr(0, 157) + "..." : s;
}

void write_class_matrix(std::ostream& md, const std::string& corner,
                        const std::vector<std::pair<std::string, std::string>>& pairs) {
  std::map<std::string, std::map<std::string, size_t>> m;
  std::map<std::string, size_t> cols;
  for (const auto& [row, col] : pairs) {
    ++m[row][col];
    ++cols[col];
  }
  md << "| " << corner << " |";
  for (const auto& [col, n] : cols) md << " " << col << " |";
  md << "\n|---|";
  for (size_t i = 0; i < cols.size(); ++i) md << "---:|";
  md << "\n";
  for (const auto& [row, counts] : m) {
    md << "| " << row << " |";
    for (const auto& [col, n] : cols) {
      const auto it = counts.find(col);
      md << " " << (it == counts.end() ? 0 : it->second) << " |";
    }
    md << "\n";
  }
}

}  // namespace ppspec::fidelity
