//! HLO text and its indexing analysis (issue: HLO indexing analysis).
