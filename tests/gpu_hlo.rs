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
            Ok(Value::Bench(b)) => assert!(b.verified, "{name}"),
            other => panic!("{name}: {other:?}"),
        }
    }
}
