//! Vectorized column reductions (issue 32, item 2): each thread reads `vector` adjacent
//! columns, as XLA's column-reduction emitter does. For column reductions of several
//! shapes, element types and layouts, and vectors 1, 2 and 4: the launch's maps are checked
//! by enumeration (every output element written once, by lane 0 of a warp; every reduced
//! element read once; a thread's `vector` elements adjacent columns of one row), the CUDA
//! kernel runs on the CPU and the C kernel (`emit target=cpu vector=N`) runs on the host,
//! both checked element by element against the reference.

use ixmap::gpu::cuda_cpu;
use ixmap::gpu::emit;
use ixmap::gpu::launch::{self, LaunchConfig, Strategy};
use ixmap::gpu::spec::KernelSpec;
use ixmap::map::{DomainPoints, Limits};

const HLO: &str = "
add_f32 {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
max_s32 {
  x = s32[] parameter(0)
  y = s32[] parameter(1)
  ROOT m = s32[] maximum(x, y)
}
cols {
  p = f32[70,96] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[96] reduce(p, z), dimensions={0}, to_apply=add_f32
}
mid {
  p = f32[3,45,20] parameter(0)
  z = f32[] constant(0)
  e = f32[3,45,20] exponential(p)
  ROOT r = f32[3,20] reduce(e, z), dimensions={1}, to_apply=add_f32
}
half {
  p = f16[33,40] parameter(0)
  z = f32[] constant(0)
  c = f32[33,40] convert(p)
  r = f32[40] reduce(c, z), dimensions={0}, to_apply=add_f32
  ROOT h = f16[40] convert(r)
}
wide16 {
  p = f16[20,256] parameter(0)
  z = f16[] constant(0)
  ROOT r = f16[256] reduce(p, z), dimensions={0}, to_apply=add_f16
}
add_f16 {
  x = f16[] parameter(0)
  y = f16[] parameter(1)
  ROOT s = f16[] add(x, y)
}
ints {
  p = s32[50,36]{1,0} parameter(0)
  z = s32[] constant(-2147483648)
  ROOT r = s32[36] reduce(p, z), dimensions={0}, to_apply=max_s32
}
";

fn spec(name: &str) -> KernelSpec {
    let mut s = ixmap::Session::new();
    for o in s.execute(HLO) {
        assert!(o.result.is_ok(), "{:?}", o.result);
    }
    ixmap::gpu::sweep::spec_for(&s.hlo, name)
        .expect("defined")
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn has_cxx() -> bool {
    std::process::Command::new(cuda_cpu::compiler())
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The launch's maps by enumeration: every output element once, from lane 0 of a warp;
/// every reduced element once; a thread's vector elements adjacent along the last kept
/// dimension (the columns).
fn check_maps(spec: &KernelSpec, vector: i64) {
    let cfg = LaunchConfig {
        vector,
        ..LaunchConfig::default()
    };
    let l = launch::choose(spec, cfg, None).expect("a launch");
    assert_eq!(l.strategy, Strategy::ColumnReduction);
    assert_eq!(l.config.vector, vector);
    let out = &spec.output;
    let strides = out.strides().expect("small");
    let mut seen = vec![0u32; out.num_elements().expect("small") as usize];
    DomainPoints::for_each(&l.write_map, &Limits::default(), &mut |p, r| {
        assert_eq!(p[0] % 32, 0, "{}: written by lane 0", spec.name);
        let off: i64 = r.iter().zip(&strides).map(|(a, b)| a * b).sum();
        seen[off as usize] += 1;
        Ok(true)
    })
    .expect("enumerates");
    assert!(
        seen.iter().all(|&k| k == 1),
        "{} vector={vector}: {seen:?}",
        spec.name
    );
    let f = &spec.functions[l.read_from];
    let n: i64 = f.dims.iter().product();
    let mut read = vec![0u32; n as usize];
    let nd = l.read_map.dims.len();
    let u = l.read_map.ranges.iter().position(|v| v.name == "unroll_id");
    DomainPoints::for_each(&l.read_map, &Limits::default(), &mut |p, r| {
        let mut off = 0i64;
        for (x, d) in r.iter().zip(&f.dims) {
            off = off * d + x;
        }
        read[off as usize] += 1;
        // The next vector element of the same thread reads the next column.
        if let Some(u) = u {
            if p[nd + u] > 0 {
                let mut q = p.to_vec();
                q[nd + u] -= 1;
                let prev = l.read_map.eval_point(&q).expect("evaluates");
                if let Some(prev) = prev {
                    let last = r.len() - 1;
                    assert_eq!(&prev[..last], &r[..last], "{}: one row", spec.name);
                    assert_eq!(prev[last] + 1, r[last], "{}: adjacent columns", spec.name);
                }
            }
        }
        Ok(true)
    })
    .expect("enumerates");
    assert!(
        read.iter().all(|&k| k == 1),
        "{} vector={vector}",
        spec.name
    );
}

#[test]
fn vector_column_launches_cover_their_elements_once() {
    for name in ["cols", "mid", "half", "ints", "wide16"] {
        let s = spec(name);
        for v in [1, 2, 4] {
            check_maps(&s, v);
        }
    }
}

#[test]
fn vector_column_kernels_run_verified_on_the_cpu() {
    if !has_cxx() {
        assert!(std::env::var("CI").is_err(), "CI and no C++ compiler");
        eprintln!("*** SKIPPED: no C++ compiler");
        return;
    }
    for name in ["cols", "mid", "half", "ints", "wide16"] {
        let s = spec(name);
        for v in [1, 2, 4] {
            let cfg = LaunchConfig {
                vector: v,
                ..LaunchConfig::default()
            };
            let l = launch::choose(&s, cfg, None).expect("a launch");
            for naive in [false, true] {
                cuda_cpu::check(&s, &l, naive)
                    .unwrap_or_else(|e| panic!("{name} vector={v} naive={naive}: CUDA: {e}"));
                let e = emit::cpu::emit_column(&s, naive, v).expect("emits");
                let k = ixmap::gpu::bench::cpu::compile(&e.source, &e.entry)
                    .unwrap_or_else(|e| panic!("{name} vector={v}: C compile: {e}"));
                let inputs = ixmap::gpu::reference::make_inputs(&s).expect("inputs");
                // SAFETY: the CPU entry takes the inputs then the output.
                unsafe { cuda_cpu::run_verified(&s, inputs, &mut |args| k.call_args(args)) }
                    .unwrap_or_else(|e| panic!("{name} vector={v} naive={naive}: C: {e}"));
            }
        }
    }
}

/// XLA's vector for a column reduction (`GetVectorSizeForMlir` on the minor kept
/// dimension, 32 threads along it): 2 for inputs of 32 bits once that dimension is even
/// and at least 64; 1 for an odd or a short one; 4 for narrower inputs when it holds 4
/// per thread and divides by 4.
#[test]
fn xla_picks_the_column_vector() {
    let dev = launch::DeviceLimits::H100;
    let want = [
        ("cols", 2),
        ("mid", 1),
        ("half", 1),
        ("ints", 1),
        ("wide16", 4),
    ];
    for (name, v) in want {
        let d = launch::xla_default(&spec(name), None, dev).expect("a default");
        assert_eq!(d.config.vector, v, "{name}: {:?}", d.rules);
    }
}
