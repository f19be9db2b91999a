//! Every fusion of the GPU transcripts, through the HLO adapter, runs on the CPU backend and
//! matches the reference element by element, simplified and naive.

use ixmap::{Session, Value};

const HLO: &str = "
add_f32 {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
fused_reshape {
  p0 = f32[8,16] parameter(0)
  p1 = f32[16,8] parameter(1)
  e = f32[8,16] exponential(p0)
  r = f32[16,8] reshape(e)
  ROOT a = f32[16,8] add(r, p1)
}
fused_log {
  p0 = f32[32,32] parameter(0)
  l = f32[32,32] log(p0)
  t = f32[32,32] transpose(l), dimensions={1,0}
  ROOT a = f32[32,32] add(l, t)
}
p0 = f32[20,40,300] parameter(0)
p1 = f32[20,40,300] parameter(1)
add0 = f32[20,40,300] add(p0, p1)
b = f32[300] parameter(0)
bc = f32[20,40,300] broadcast(b), dimensions={2}
t = f32[64,96] parameter(0)
tr = f32[96,64] transpose(t), dimensions={1,0}
p2 = f32[64,96]{0,1} parameter(0)
p3 = f32[64,96] parameter(1)
mixed = f32[64,96] add(p2, p3)
wide = f32[100,40] parameter(0)
half = f32[100,20] slice(wide), slice={[0:100], [0:20]}
r = f32[100,200] parameter(0)
zero = f32[] constant(0)
rowsum = f32[100] reduce(r, zero), dimensions={1}, to_apply=add_f32
colsum = f32[200] reduce(r, zero), dimensions={0}, to_apply=add_f32
";

#[test]
fn every_transcript_fusion_is_verified_on_the_cpu() {
    if !ixmap::transcript::requirement_met("cc") {
        return;
    }
    let mut s = Session::new();
    for o in s.execute(HLO) {
        assert!(o.result.is_ok(), "{:?}", o.result);
    }
    for name in [
        "fused_reshape",
        "fused_log",
        "add0",
        "bc",
        "tr",
        "mixed",
        "half",
        "rowsum",
        "colsum",
    ] {
        let out = s.execute(&format!("bench {name} device=cpu reps=1"));
        match &out[0].result {
            Ok(Value::Bench(b)) => assert!(b.verified(), "{name}"),
            other => panic!("{name}: {other:?}"),
        }
    }
}

/// The host kernel computes a reduction once per row: the row-by-row kernel as a local of the
/// row, the memoizing one (naive indexing, or reductions not per row) by remembering the
/// last value by the row it reduces. That memory must not outlive a call:
/// a one-row softmax keys every element to the same row, so a second call on other inputs
/// would reuse the first call's max and sum if it did.
#[test]
fn memoized_reductions_do_not_outlive_a_call() {
    use ixmap::gpu::bench::cpu::compile;
    use ixmap::gpu::bench::{reference_output, verify};
    use ixmap::gpu::emit::cpu::emit;
    use ixmap::hlo::workspace::Target;
    if !ixmap::transcript::requirement_met("cc") {
        return;
    }
    let mut s = Session::new();
    let src = "
maxf {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}
addf {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
sm {
  p0 = f32[1,1,8] parameter(0)
  c = f32[] constant(-inf)
  mx = f32[1,1] reduce(p0, c), dimensions={2}, to_apply=maxf
  b = f32[1,1,8] broadcast(mx), dimensions={0,1}
  sub = f32[1,1,8] subtract(p0, b)
  e = f32[1,1,8] exponential(sub)
  z = f32[] constant(0)
  sum = f32[1,1] reduce(e, z), dimensions={2}, to_apply=addf
  bs = f32[1,1,8] broadcast(sum), dimensions={0,1}
  ROOT d = f32[1,1,8] divide(e, bs)
}";
    for o in s.execute(src) {
        assert!(o.result.is_ok(), "{:?}", o.result);
    }
    let Some(Target::Computation(c)) = s.hlo.resolve("sm") else {
        panic!("sm is defined")
    };
    let spec = ixmap::gpu::from_hlo::from_computation(&s.hlo.module, c).expect("adapts");
    for naive in [false, true] {
        let e = emit(&spec, naive).expect("emits");
        if naive {
            assert!(e.source.contains("ix_epoch"), "{}", e.source);
        } else {
            // Row by row: each row's reductions are locals of the row's iteration, so
            // nothing is remembered between calls at all.
            assert!(!e.source.contains("static _Thread_local"), "{}", e.source);
            assert!(e.source.contains("reduce"), "{}", e.source);
        }
        let k = compile(&e.source, &e.entry).expect("compiles");
        let mut out = vec![0u8; 32];
        for scale in [1.0f32, -3.0, 0.25] {
            let inputs: Vec<Vec<u8>> = vec![(0..8)
                .flat_map(|i| (scale * i as f32).to_le_bytes())
                .collect()];
            k.call(&inputs, &mut out);
            let want = reference_output(&spec, &inputs).expect("reference");
            verify(&spec, &out, &want).expect("each call sees its own inputs");
        }
    }
}
