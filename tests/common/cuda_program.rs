//! Many emitted CUDA kernels as one program, so that NVRTC compiles them at once (a
//! program per kernel costs about a second each): every kernel in a namespace of its own,
//! its entry renamed, the `#include` lines of all of them first (each once).

#[derive(Default)]
pub struct CudaProgram {
    includes: String,
    body: String,
    /// How many kernels it holds.
    pub kernels: usize,
}

impl CudaProgram {
    /// Adds kernel `source` with entry point `entry` as `k{n}::{entry}__k{n}`, where `n`
    /// counts the kernels added before; NVRTC's messages name it `kernel {n}: {label}`.
    pub fn add(&mut self, label: &str, source: &str, entry: &str) {
        let n = self.kernels;
        let source = source.replace(&format!(" {entry}("), &format!(" {entry}__k{n}("));
        self.body += &format!("#line 1 \"kernel {n}: {label}\"\nnamespace k{n} {{\n");
        for l in source.lines() {
            if l.starts_with("#include ") {
                if !self.includes.contains(l) {
                    self.includes += l;
                    self.includes.push('\n');
                }
            } else {
                self.body += l;
                self.body.push('\n');
            }
        }
        self.body += "}\n";
        self.kernels += 1;
    }

    /// The program's text: the `#include` lines, then the namespaces.
    pub fn text(&self) -> String {
        format!("{}{}", self.includes, self.body)
    }
}
