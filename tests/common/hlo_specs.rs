//! A kernel spec from HLO text, as a session defines it, and the scalar computations
//! (`addf`, `maxf`) that reductions apply.

use ixmap::gpu::spec::KernelSpec;
use ixmap::hlo::workspace::Target;

/// The kernel spec of computation `name` defined by `src` (panics where it does not
/// define and adapt: the test's own text).
pub fn spec(src: &str, name: &str) -> KernelSpec {
    let mut s = ixmap::Session::new();
    for o in s.execute(src) {
        assert!(o.result.is_ok(), "{:?}\n{src}", o.result);
    }
    let Some(Target::Computation(c)) = s.hlo.resolve(name) else {
        panic!("{name} is defined")
    };
    ixmap::gpu::from_hlo::from_computation(&s.hlo.module, c).expect("adapts")
}

/// `addf` and `maxf`, f32.
pub const OPS: &str = "addf {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\nmaxf {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT m = f32[] maximum(a, b)\n}\n";
