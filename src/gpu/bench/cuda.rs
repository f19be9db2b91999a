//! The GPU backend: CUDA is loaded at run time through cudarc (driver API + NVRTC, dynamic
//! loading), so a machine without a driver builds and runs ixmap and is told plainly that
//! there is no CUDA device.

use super::{reference_output, verify, Measured, Options, Outcome, Timing};
use crate::gpu::emit;
use crate::gpu::launch;
use crate::gpu::reference::make_inputs;
use crate::gpu::spec::KernelSpec;
use crate::MapError;

pub const NO_DEVICE: &str = "no CUDA device found";

/// Ok when the CUDA driver loads and reports at least one device; else why not.
pub fn available() -> Result<(), String> {
    // SAFETY: only probes whether the shared library can be opened.
    let present = std::panic::catch_unwind(|| unsafe { cudarc::driver::sys::is_culib_present() })
        .unwrap_or(false);
    if !present {
        return Err(format!(
            "{NO_DEVICE} (the CUDA driver library is not installed)"
        ));
    }
    match std::panic::catch_unwind(cudarc::driver::CudaContext::device_count) {
        Ok(Ok(n)) if n > 0 => Ok(()),
        Ok(Ok(_)) => Err(format!("{NO_DEVICE} (the driver reports no device)")),
        Ok(Err(e)) => Err(format!("{NO_DEVICE} ({e})")),
        Err(_) => Err(format!("{NO_DEVICE} (the CUDA driver could not be loaded)")),
    }
}

pub fn run(
    spec: &KernelSpec,
    opts: &Options,
    with_naive: bool,
    naive_only: bool,
) -> Result<Outcome, MapError> {
    available().map_err(MapError::Other)?;
    run_on_device(spec, opts, None, with_naive, naive_only)
}

/// [`run`] with a launch given (a layout's) instead of the one `opts` chooses.
pub fn run_launch(
    spec: &KernelSpec,
    opts: &Options,
    launch: &launch::Launch,
    with_naive: bool,
    naive_only: bool,
) -> Result<Outcome, MapError> {
    available().map_err(MapError::Other)?;
    run_on_device(spec, opts, Some(launch), with_naive, naive_only)
}

fn cuda_err(what: &str) -> impl Fn(cudarc::driver::DriverError) -> MapError + '_ {
    move |e| MapError::Other(format!("CUDA {what}: {e}"))
}

/// What the report says of the device: its name, SMs, memory clock and bus, L2 size.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceInfo {
    pub name: String,
    pub sms: i64,
    pub threads_per_sm: i64,
    pub memory_clock_mhz: i64,
    pub bus_bits: i64,
    pub l2_bytes: i64,
}

impl DeviceInfo {
    /// `NVIDIA H100 80GB HBM3: 132 SMs, memory 2619 MHz x 5120-bit, L2 50 MiB`.
    pub fn describe(&self) -> String {
        format!(
            "{}: {} SMs, memory {} MHz x {}-bit, L2 {:.0} MiB",
            self.name,
            self.sms,
            self.memory_clock_mhz,
            self.bus_bits,
            self.l2_bytes as f64 / (1 << 20) as f64
        )
    }

    /// What XLA's launch rules read of it.
    pub fn limits(&self) -> launch::DeviceLimits {
        launch::DeviceLimits {
            sms: self.sms.max(1),
            threads_per_sm: self.threads_per_sm.max(32),
        }
    }
}

/// Device 0's [`DeviceInfo`], when a CUDA device is found.
pub fn device_info() -> Result<DeviceInfo, MapError> {
    available().map_err(MapError::Other)?;
    let ctx = cudarc::driver::CudaContext::new(0).map_err(cuda_err("context"))?;
    info_of(&ctx)
}

fn info_of(ctx: &std::sync::Arc<cudarc::driver::CudaContext>) -> Result<DeviceInfo, MapError> {
    use cudarc::driver::sys::CUdevice_attribute as A;
    let at = |a: A| {
        ctx.attribute(a)
            .map(i64::from)
            .map_err(cuda_err("attribute"))
    };
    Ok(DeviceInfo {
        name: ctx.name().unwrap_or_else(|_| "CUDA device 0".into()),
        sms: at(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
        threads_per_sm: at(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)?,
        memory_clock_mhz: at(A::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE)? / 1000,
        bus_bits: at(A::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)?,
        l2_bytes: at(A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?,
    })
}

/// How a sample is taken: `sets` copies of the inputs and output, used in turn, so that
/// what one launch reads was last touched `sets - 1` launches before; `launches` launches
/// between the two events of a sample (a multiple of `sets`), the time divided by them.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    pub sets: usize,
    pub launches: usize,
}

/// Launches per sample at least: a 10 µs kernel's launch overhead (a few µs) is then spread
/// over 20 of them, as Triton's `do_bench` and Nsight Compute's replay avoid it.
pub const MIN_LAUNCHES: usize = 20;

/// The sample plan for a kernel moving `bytes_per_set` (inputs and output) on a device
/// with `l2_bytes` of L2 and `free_bytes` of free memory. Cold (the default): enough sets
/// that the sets together are at least twice the L2, so each launch reads device memory
/// (the L2 holds at most half of what was touched since), as long as they fit in a quarter
/// of the free memory (else as many as fit, at least 1); `hot`: one set, the data
/// cache-resident after the first launch.
pub fn plan(bytes_per_set: u64, l2_bytes: u64, free_bytes: u64, hot: bool) -> Plan {
    let per = bytes_per_set.max(1);
    let sets = if hot {
        1
    } else {
        let want = (2 * l2_bytes).div_ceil(per) + 1;
        let fit = (free_bytes / 4 / per).max(1);
        want.min(fit).clamp(1, 4096) as usize
    };
    Plan {
        sets,
        launches: MIN_LAUNCHES.div_ceil(sets) * sets,
    }
}

/// A CUDA stream as cudarc shares it.
pub(super) type Stream = std::sync::Arc<cudarc::driver::CudaStream>;

/// Issues batch `j` (its second argument) on the stream given (the first).
pub(super) type Record<'a> = dyn FnMut(&Stream, usize) -> Result<(), MapError> + 'a;

/// How each sample's batch of launches is issued between its two CUDA events.
pub(super) enum Batches {
    /// Captured once (per variant, and the copy) on a stream of its own and replayed: one
    /// host call a sample, so the batch is not bound by the host's launch overhead (as
    /// Triton's `do_bench` with CUDA graphs and nvbench do).
    Graphs {
        stream: Stream,
        graphs: Vec<cudarc::driver::CudaGraph>,
    },
    /// Launched one by one on the default stream; why no graph is used.
    Direct { why: String },
}

impl Batches {
    /// `21 launches per sample replayed as a CUDA graph between CUDA events`, or the
    /// direct launches' wording and why no graph was used.
    pub(super) fn describe(&self, launches: usize) -> String {
        match self {
            Batches::Graphs { .. } => batch_wording(launches, None),
            Batches::Direct { why } => batch_wording(launches, Some(why)),
        }
    }
}

/// [`Batches::describe`]'s words: replayed as a graph, or launched directly and why.
fn batch_wording(launches: usize, direct: Option<&str>) -> String {
    let s = if launches == 1 { "" } else { "es" };
    match direct {
        None => {
            format!("{launches} launch{s} per sample replayed as a CUDA graph between CUDA events")
        }
        Some(why) => format!(
            "{launches} launch{s} per sample between CUDA events (launched directly: {why})"
        ),
    }
}

/// Set to `0` to time the direct launches even where a CUDA graph can be captured.
pub const GRAPH_ENV: &str = "IXMAP_CUDA_GRAPH";

/// Captures `n` batches as CUDA graphs: `record(stream, j)` issues batch `j` on the
/// capture stream. Any failure (the stream, the capture, a launch during it, the
/// instantiation, or a first replay of each graph, which is synchronized) ends any capture
/// in progress and gives [`Batches::Direct`] with why; the default stream is then usable
/// as before.
///
/// The slices that `record` uses must have been allocated with the context's event
/// tracking off (a capture cannot wait on events recorded outside it).
pub(super) fn capture(
    ctx: &std::sync::Arc<cudarc::driver::CudaContext>,
    default: &Stream,
    n: usize,
    record: &mut Record<'_>,
) -> Batches {
    if std::env::var(GRAPH_ENV).is_ok_and(|v| v.trim() == "0") {
        return Batches::Direct {
            why: format!("{GRAPH_ENV}=0"),
        };
    }
    match try_capture(ctx, default, n, record) {
        Ok(b) => b,
        Err(why) => {
            // An error cudarc kept from a drop during the attempt (a graph it destroyed)
            // would otherwise fail the direct path's next call.
            let _ = ctx.check_err();
            Batches::Direct {
                why: format!("no CUDA graph, {why}"),
            }
        }
    }
}

fn try_capture(
    ctx: &std::sync::Arc<cudarc::driver::CudaContext>,
    default: &Stream,
    n: usize,
    record: &mut Record<'_>,
) -> Result<Batches, String> {
    use cudarc::driver::sys::{
        CUgraphInstantiate_flags as Flags, CUstreamCaptureMode, CUstreamCaptureStatus,
    };
    let e = |what: &'static str| move |x: cudarc::driver::DriverError| format!("{what}: {x}");
    // Errors kept from earlier drops belong to the run, not to the capture.
    ctx.check_err().map_err(e("before capture"))?;
    // What the default stream has queued (the buffers' copies and zeroing, the first runs)
    // is done first: the capture stream does not wait for it.
    default.synchronize().map_err(e("sync"))?;
    // The legacy default stream cannot be captured: a (non-blocking) stream of its own.
    let stream = ctx.new_stream().map_err(e("stream"))?;
    let mut graphs = Vec::with_capacity(n);
    for j in 0..n {
        stream
            .begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            .map_err(e("begin capture"))?;
        let recorded = record(&stream, j);
        // Ends the capture even after a failed launch (the graph is then invalidated).
        let ended = stream.end_capture(Flags(0));
        if !matches!(
            stream.capture_status(),
            Ok(CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE)
        ) {
            let _ = stream.end_capture(Flags(0));
        }
        recorded.map_err(|x| format!("during capture: {x}"))?;
        match ended {
            Ok(Some(g)) => graphs.push(g),
            Ok(None) => return Err("the capture gave no graph".into()),
            Err(x) => return Err(format!("end of capture or instantiation: {x}")),
        }
    }
    // One replay of each before anything is timed: a graph that cannot run falls back here
    // (its outputs are the first run's again, checked after the timed rounds).
    let replayed = graphs
        .iter()
        .try_for_each(|g| {
            g.upload().map_err(e("graph upload"))?;
            g.launch().map_err(e("graph launch"))
        })
        .and_then(|_| stream.synchronize().map_err(e("graph replay")));
    if replayed.is_err() {
        // Nothing of the graphs still runs beside the direct launches.
        let _ = stream.synchronize();
    }
    replayed?;
    Ok(Batches::Graphs { stream, graphs })
}

/// One sample of a captured batch of `launches`: event, graph launch, event, the time
/// divided by the launches.
pub(super) fn replay(
    stream: &Stream,
    graph: &cudarc::driver::CudaGraph,
    launches: usize,
) -> Result<f64, MapError> {
    use cudarc::driver::sys::CUevent_flags;
    let timed = (|| {
        let start = stream
            .record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(cuda_err("event"))?;
        graph.launch().map_err(cuda_err("graph launch"))?;
        let end = stream
            .record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(cuda_err("event"))?;
        end.synchronize().map_err(cuda_err("sync"))?;
        Ok(start.elapsed_ms(&end).map_err(cuda_err("timing"))? as f64 / 1e3 / launches as f64)
    })();
    if timed.is_err() {
        // The buffers are freed on the default stream, which does not wait for this one.
        let _ = stream.synchronize();
    }
    timed
}

/// CUDA's launch shape from a launch's 3-D grid and block, each extent checked against the
/// driver's `u32` (and CUDA's limits: 2^31 - 1 blocks in x, 65535 in y and z, 1024 threads
/// a block).
pub fn cuda_dims(l: &launch::Launch) -> Result<((u32, u32, u32), (u32, u32, u32)), MapError> {
    let limits = [(i32::MAX as i64), 65535, 65535];
    let mut g = [1u32; 3];
    let mut b = [1u32; 3];
    for d in 0..3 {
        if !(1..=limits[d]).contains(&l.grid[d]) {
            return Err(MapError::Other(format!(
                "grid dimension {d} is {} blocks, outside CUDA's [1, {}]",
                l.grid[d], limits[d]
            )));
        }
        g[d] = l.grid[d] as u32;
        if !(1..=1024).contains(&l.block[d]) {
            return Err(MapError::Other(format!(
                "block dimension {d} is {} threads, outside CUDA's [1, 1024]",
                l.block[d]
            )));
        }
        b[d] = l.block[d] as u32;
    }
    let threads = b.iter().map(|&x| x as i64).product::<i64>();
    if threads > 1024 {
        return Err(MapError::Other(format!(
            "a block of {threads} threads is over CUDA's 1024"
        )));
    }
    Ok(((g[0], g[1], g[2]), (b[0], b[1], b[2])))
}

/// Compiles each variant with NVRTC, runs it on device 0, checks every element, and times
/// them and a device-to-device copy of the same bytes the way the field does:
///
/// - each sample is [`Plan::launches`] launches between two CUDA events, the time divided
///   by them (the launch overhead of one call is not the kernel's time); the batch is
///   captured once as a CUDA graph and replayed, so the host's launch calls do not bound
///   it, or launched directly where a graph fails ([`capture`]; the report says which);
/// - unless `hot`, the inputs and outputs are rotated over [`Plan::sets`] copies whose
///   total is at least twice the L2, so each launch reads from device memory (as Nsight
///   Compute's cache flush and Triton's `do_bench` make sure); the copy rotates as well;
/// - the variants and the copy are interleaved round by round (in a rotating order), so a
///   slow spell falls on all of them alike;
/// - the grid and block go to the driver in all three dimensions.
///
/// Every output set is checked against the reference after the timed rounds.
fn run_on_device(
    spec: &KernelSpec,
    opts: &Options,
    given: Option<&launch::Launch>,
    with_naive: bool,
    naive_only: bool,
) -> Result<Outcome, MapError> {
    use cudarc::driver::sys::CUevent_flags;
    use cudarc::driver::{CudaContext, CudaSlice, LaunchConfig as CuLaunch, PushKernelArg};
    let ctx = CudaContext::new(0).map_err(cuda_err("context"))?;
    // SAFETY: the buffers below carry no cudarc events, so nothing orders two streams for
    // us: the work is on the default stream, except the CUDA graphs' capture and replays on
    // a stream of their own, which start after a synchronization of the default stream
    // ([`capture`]) and are each synchronized before anything else runs or is freed
    // ([`replay`]). With one stream (until then) the events were never used.
    unsafe { ctx.disable_event_tracking() };
    let info = info_of(&ctx)?;
    let stream = ctx.default_stream();
    let inputs = make_inputs(spec)?;
    let want = reference_output(spec, &inputs)?;
    let out_bytes = spec.output.num_bytes()? as usize;
    let bytes = spec.bytes_moved()? as u64;
    let per_set: u64 = inputs.iter().map(|b| b.len() as u64).sum::<u64>() + out_bytes as u64;
    let free = ctx.mem_get_info().map(|(f, _)| f as u64).unwrap_or(0);
    let plan = plan(per_set, info.l2_bytes.max(0) as u64, free, opts.hot);
    let mut sets_in: Vec<Vec<CudaSlice<u8>>> = Vec::new();
    let mut sets_out: Vec<CudaSlice<u8>> = Vec::new();
    for _ in 0..plan.sets {
        sets_in.push(
            inputs
                .iter()
                .map(|b| stream.clone_htod(b.as_slice()))
                .collect::<Result<_, _>>()
                .map_err(cuda_err("copy in"))?,
        );
        sets_out.push(
            stream
                .alloc_zeros::<u8>(out_bytes.max(1))
                .map_err(cuda_err("alloc"))?,
        );
    }
    let launch = match given {
        Some(l) => l.clone(),
        None => launch::choose(spec, opts.config, opts.tiled)?,
    };
    let (grid_dim, block_dim) = cuda_dims(&launch)?;
    let cfg = CuLaunch {
        grid_dim,
        block_dim,
        shared_mem_bytes: 0,
    };
    let mut modes = Vec::new();
    if !naive_only {
        modes.push(false);
    }
    if with_naive || naive_only {
        modes.push(true);
    }
    struct Loaded {
        label: String,
        code: Option<String>,
        func: cudarc::driver::CudaFunction,
    }
    let mut loaded = Vec::new();
    for naive in modes {
        let e = emit::cuda::emit(spec, &launch, naive)?;
        // CUDA's headers for f16/bf16 kernels, found where CUDA may be installed.
        let include = if crate::gpu::nvcc::needs_cuda_headers(&e.source) {
            Some(crate::gpu::nvcc::cuda_include().map_err(MapError::Other)?)
        } else {
            None
        };
        let copts = cudarc::nvrtc::CompileOptions {
            include_paths: include
                .iter()
                .map(|i| i.dir.display().to_string())
                .collect(),
            ..Default::default()
        };
        let ptx = cudarc::nvrtc::compile_ptx_with_opts(&e.source, copts)
            .map_err(|x| MapError::Other(format!("NVRTC rejected the kernel: {x}")))?;
        let module = ctx.load_module(ptx).map_err(cuda_err("module"))?;
        let func = module
            .load_function(&e.entry)
            .map_err(cuda_err("function"))?;
        let mut label = String::from(if naive { "naive" } else { "simplified" });
        if let Some(inc) = &include {
            label += &format!(" [CUDA headers: {inc}]");
        }
        // PTX instructions, registers and spills (and SASS with cuobjdump), on their own line.
        let code = crate::gpu::nvcc::code_stats(&e.source).map(|c| c.summary());
        loaded.push(Loaded { label, code, func });
    }
    let go = |stream: &Stream,
              f: &cudarc::driver::CudaFunction,
              set: usize,
              outs: &mut [CudaSlice<u8>]| {
        let mut b = stream.launch_builder(f);
        for d in &sets_in[set] {
            b.arg(d);
        }
        b.arg(&mut outs[set]);
        // SAFETY: the kernel's parameters are the input pointers then the output pointer,
        // sized from the same tensors; every offset comes from maps bounded by the shapes,
        // and every output set is checked against the reference.
        unsafe { b.launch(cfg) }
            .map(|_| ())
            .map_err(cuda_err("launch"))
    };
    // First run of each variant: checked before anything is timed.
    for k in &loaded {
        for set in 0..plan.sets {
            go(&stream, &k.func, set, &mut sets_out)?;
        }
        let host = stream
            .clone_dtoh(&sets_out[0])
            .map_err(cuda_err("copy out"))?;
        verify(spec, &host, &want)?;
    }
    // The copy's buffers: half the bytes read and half written, rotated like the kernels'.
    let half = (bytes / 2).max(1) as usize;
    let mut copy_src = Vec::new();
    let mut copy_dst = Vec::new();
    for _ in 0..plan.sets {
        copy_src.push(stream.alloc_zeros::<u8>(half).map_err(cuda_err("alloc"))?);
        copy_dst.push(stream.alloc_zeros::<u8>(half).map_err(cuda_err("alloc"))?);
    }
    let n = loaded.len() + 1;
    // Sample j's batch: variant j's launches (the copy's for j = n - 1), rotating over the
    // sets, on `stream`.
    let mut batch = |stream: &Stream, j: usize, outs: &mut [CudaSlice<u8>]| {
        for i in 0..plan.launches {
            let set = i % plan.sets;
            if j < loaded.len() {
                go(stream, &loaded[j].func, set, outs)?;
            } else {
                stream
                    .memcpy_dtod(&copy_src[set], &mut copy_dst[set])
                    .map_err(cuda_err("copy"))?;
            }
        }
        Ok(())
    };
    // Every variant and the copy as CUDA graphs, or (if any of them fails) all launched
    // directly: the copy is measured as the kernels are.
    let batches = capture(&ctx, &stream, n, &mut |s, j| batch(s, j, &mut sets_out));
    let mut samples = vec![Vec::new(); n];
    let mut sample = |j: usize, outs: &mut [CudaSlice<u8>]| -> Result<f64, MapError> {
        if let Batches::Graphs { stream, graphs } = &batches {
            return replay(stream, &graphs[j], plan.launches);
        }
        let start = stream
            .record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(cuda_err("event"))?;
        batch(&stream, j, outs)?;
        let end = stream
            .record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(cuda_err("event"))?;
        end.synchronize().map_err(cuda_err("sync"))?;
        Ok(start.elapsed_ms(&end).map_err(cuda_err("timing"))? as f64 / 1e3 / plan.launches as f64)
    };
    for _ in 0..opts.warmups {
        for j in 0..n {
            sample(j, &mut sets_out)?;
        }
    }
    for r in 0..opts.reps.max(1) {
        for k in 0..n {
            let j = (r + k) % n;
            let t = sample(j, &mut sets_out)?;
            samples[j].push(t);
            let reps = opts.reps.max(1) as u64;
            crate::report_progress((r * n + k + 1) as u64, reps * n as u64, "timing rounds");
        }
    }
    // Every output set verified again: the figures belong to correct outputs.
    for out in &sets_out {
        let host = stream.clone_dtoh(out).map_err(cuda_err("copy out"))?;
        verify(spec, &host, &want)?;
    }
    let how = batches.describe(plan.launches);
    drop(batches);
    let copy = Timing::from_samples(samples.pop().unwrap_or_default());
    let variants = loaded
        .into_iter()
        .zip(samples)
        .map(|(k, s)| Measured {
            label: k.label,
            timing: Timing::from_samples(s),
            verified: true,
            compile_s: 0.0,
            code: k.code,
        })
        .collect();
    Ok(Outcome {
        device: format!("gpu ({})", info.describe()),
        bytes,
        copy,
        variants,
        method: Some(if opts.hot {
            format!(
                "{}, hot: one set of buffers, cache-resident after the first launch; variants and copy interleaved",
                how
            )
        } else {
            format!(
                "{}, inputs and output rotated over {} sets ({:.1} MiB, at least twice the L2) so each launch reads device memory; variants and copy interleaved",
                how,
                plan.sets,
                (per_set * plan.sets as u64) as f64 / (1 << 20) as f64
            )
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Cold samples rotate over sets twice the L2; hot ones use one; launches per sample
    /// are a multiple of the sets and at least [`MIN_LAUNCHES`].
    #[test]
    fn plans_rotate_past_the_l2() {
        let l2 = 50 << 20;
        // 8 MiB a set on a 50 MiB L2: 13 sets + 1 = 14 (112 MiB).
        let p = plan(8 << 20, l2, 80 << 30, false);
        assert_eq!(p.sets, 14);
        assert!(p.sets as u64 * (8 << 20) >= 2 * l2);
        assert_eq!(p.launches % p.sets, 0);
        assert!(p.launches >= MIN_LAUNCHES);
        // A tensor bigger than the L2 twice over: still two sets (the previous launch's
        // data is what the L2 may hold).
        assert_eq!(plan(256 << 20, l2, 80 << 30, false).sets, 2);
        // Hot: one set, 20 launches.
        assert_eq!(
            plan(8 << 20, l2, 80 << 30, true),
            Plan {
                sets: 1,
                launches: 20
            }
        );
        // Little free memory: as many sets as fit in a quarter of it, at least one.
        assert_eq!(plan(8 << 20, l2, 64 << 20, false).sets, 2);
        assert_eq!(plan(8 << 20, l2, 0, false).sets, 1);
    }

    /// The `reps:` line says whether the batch was a CUDA graph, and why not.
    #[test]
    fn batch_wording_says_graph_or_direct() {
        assert_eq!(
            batch_wording(21, None),
            "21 launches per sample replayed as a CUDA graph between CUDA events"
        );
        assert_eq!(
            batch_wording(1, Some("IXMAP_CUDA_GRAPH=0")),
            "1 launch per sample between CUDA events (launched directly: IXMAP_CUDA_GRAPH=0)"
        );
    }

    /// Every dimension of the grid and block reaches the driver, within CUDA's limits.
    #[test]
    fn launch_shapes_pass_all_three_dimensions() {
        use crate::gpu::spec::{ElemType, Tensor};
        let out = Tensor::row_major("o", ElemType::F32, &[64, 32]);
        let mut l = launch::loop_launch(&out, Default::default()).expect("launch");
        l.grid = [4, 3, 2];
        l.block = [32, 2, 1];
        assert_eq!(cuda_dims(&l).expect("fits"), ((4, 3, 2), (32, 2, 1)));
        l.grid[1] = 70000;
        assert!(cuda_dims(&l).is_err());
        l.grid[1] = 1;
        l.block = [1024, 2, 1];
        assert!(cuda_dims(&l).is_err());
        l.block = [32, 1, 0];
        assert!(cuda_dims(&l).is_err());
    }
}
