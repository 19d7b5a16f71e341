//! Generated kernel source (WGSL, and CUDA C++ with the `cuda` feature) of every CubeCL kernel of this crate,
//! for review and for the insta snapshot tests in this module. See `docs/kernels.md`.
//!
//! A kernel is *defined* (traced into CubeCL IR, nothing launched) with a wgpu client — on a machine without a
//! GPU that is Mesa lavapipe — and the same [`KernelDefinition`] is then compiled by the WGSL compiler and,
//! with the `cuda` feature, by the CUDA C++ compiler (no GPU and no NVRTC needed: NVRTC only runs at launch).
//! Sources are compiled in [`ExecutionMode::Unchecked`], the mode `launch_unchecked` uses, with the
//! comptime parameters listed in [`kernels`] (one representative specialisation per kernel, f32).
//!
//! Normalisation (so snapshots are stable): the compilers emit shared-memory declarations in hash-map order
//! (seen with CUDA C++: the `shared_memory_N` blocks and their offsets into `dynamic_shared_mem` change from
//! one compilation to the next, and so does the list of uninitialised locals `uint32 l_mut_23;`).
//! [`normalise_wgsl`] and [`normalise_cuda`] sort those declarations and, for CUDA, replace the
//! shared-memory byte offsets with `OFFSET`; everything else is verbatim.
//!
//! Caveats: the wgpu runtime compiles with the adapter's `WgpuCompilationOptions` (this uses the defaults),
//! and CUDA C++ defined through a real CUDA client numbers its locals differently (`l_38` vs `l_11`); the
//! program text is otherwise the same.
//!
//! Dump every kernel's source to a directory: `KERNEL_SOURCE_DUMP=/tmp/kernels cargo test --release
//! --features wgpu,cuda -p kernels-cubecl --lib -- --skip cuda snapshot` (files `<name>.wgsl`, `<name>.cu`).

use cubecl::prelude::*;
use cubecl::wgpu::{WgpuDevice, WgpuRuntime, WgslCompiler};
use cubecl::{Compiler, WgpuCompilationOptions};

use cubecl::ir::{ElemType, FloatKind, IntKind, StorageType};

/// Source text of one kernel specialisation.
#[derive(Clone, Debug)]
pub struct KernelSource {
    /// Snapshot name, e.g. `fa2_forward_f32_d32`.
    pub name: &'static str,
    /// WGSL (what wgpu runs).
    pub wgsl: String,
    /// CUDA C++ (what NVRTC compiles on the CUDA backend); `None` without the `cuda` feature.
    pub cuda: Option<String>,
}

/// The wgpu client the kernels are defined with (a kernel definition reads the client's properties).
pub fn client() -> ComputeClient<WgpuRuntime> {
    WgpuRuntime::client(&WgpuDevice::DefaultDevice)
}

/// Launch settings as the `#[cube(launch_unchecked)]` launchers build them (32-bit addressing).
pub fn settings(units_per_cube: usize) -> KernelSettings {
    KernelSettings::default().cube_dim(CubeDim::new_1d(units_per_cube as u32)).address_type(AddressType::U32)
}

/// WGSL of a kernel definition (unchecked mode, as launched).
pub fn wgsl(def: KernelDefinition) -> String {
    WgslCompiler::default()
        .compile(def, &WgpuCompilationOptions::default(), ExecutionMode::Unchecked, AddressType::U32.unsigned_type())
        .expect("WGSL compilation")
        .to_string()
}

/// CUDA C++ of a kernel definition (unchecked mode, as launched).
#[cfg(feature = "cuda")]
pub fn cuda(def: KernelDefinition) -> String {
    type C = cubecl::cuda::CudaCompiler;
    // As the CUDA runtime sets it (`fast_math` kernels get `__expf` & co.).
    let mut options = <C as Compiler>::CompilationOptions::default();
    options.supports_features.fast_math = true;
    C::default()
        .compile(def, &options, ExecutionMode::Unchecked, AddressType::U32.unsigned_type())
        .expect("CUDA C++ compilation")
        .to_string()
}

/// Sorts the `var<workgroup>` declarations by name (in place: they keep the lines they occupied).
pub fn normalise_wgsl(src: &str) -> String {
    let mut lines: Vec<String> = src.lines().map(str::to_owned).collect();
    sort_in_place(&mut lines, |l| l.starts_with("var<workgroup>"));
    lines.join("\n")
}

/// Sorts the lines selected by `pick`, each sorted line taking one of the selected positions.
fn sort_in_place(lines: &mut [String], pick: impl Fn(&str) -> bool) {
    let pos: Vec<usize> = (0..lines.len()).filter(|&i| pick(&lines[i])).collect();
    let mut picked: Vec<String> = pos.iter().map(|&i| lines[i].clone()).collect();
    picked.sort();
    for (i, l) in pos.into_iter().zip(picked) {
        lines[i] = l;
    }
}

/// `uint32 l_mut_23;` / `float l_arr_3[32];`: a function-scope local declared without initialiser.
fn is_cuda_local_decl(line: &str) -> bool {
    let Some((ty, rest)) = line.split_once(' ') else { return false };
    let name = rest.strip_suffix(';').unwrap_or("");
    let name = name.split('[').next().unwrap_or("");
    !ty.is_empty()
        && ty.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && (name.starts_with("l_mut_") || name.starts_with("l_arr_"))
        && name[6..].chars().all(|c| c.is_ascii_digit())
        && rest.ends_with(';')
}

/// Sorts the `// Shared array size` + `T *shared_memory_N = reinterpret_cast<..>(&dynamic_shared_mem[K]);`
/// line pairs by name and replaces the offsets `K` (which follow the emission order) with `OFFSET`; sorts
/// the uninitialised local declarations (`uint32 l_mut_23;`, `float l_arr_3[32];`, also hash-ordered).
pub fn normalise_cuda(src: &str) -> String {
    let mut lines: Vec<String> = src.lines().map(str::to_owned).collect();
    let pos: Vec<usize> = (0..lines.len().saturating_sub(1))
        .filter(|&i| lines[i].starts_with("// Shared array size") && lines[i + 1].contains("dynamic_shared_mem["))
        .collect();
    let mut pairs: Vec<(String, String)> = pos
        .iter()
        .map(|&i| {
            let decl = &lines[i + 1];
            let start = decl.find("dynamic_shared_mem[").unwrap() + "dynamic_shared_mem[".len();
            let end = start + decl[start..].find(']').unwrap_or(0);
            let decl = format!("{}OFFSET{}", &decl[..start], &decl[end..]);
            (decl, lines[i].clone())
        })
        .collect();
    pairs.sort();
    for (i, (decl, comment)) in pos.into_iter().zip(pairs) {
        lines[i] = comment;
        lines[i + 1] = decl;
    }
    sort_in_place(&mut lines, is_cuda_local_decl);
    sort_struct_blocks(&mut lines);
    lines.join("\n")
}

/// Sorts the consecutive `struct __align__(N) T { … };` vector-type declarations at the top of the CUDA
/// source (emitted in hash order) by their text.
fn sort_struct_blocks(lines: &mut Vec<String>) {
    let Some(first) = lines.iter().position(|l| l.starts_with("struct __align__(")) else { return };
    let mut blocks: Vec<Vec<String>> = Vec::new();
    let mut i = first;
    while i < lines.len() && lines[i].starts_with("struct __align__(") {
        let Some(len) = lines[i..].iter().position(|l| l == "};") else { return };
        blocks.push(lines[i..=i + len].to_vec());
        i += len + 1;
    }
    blocks.sort();
    lines.splice(first..i, blocks.into_iter().flatten());
}

/// Compiles a definition to every available target.
pub fn sources(name: &'static str, def: KernelDefinition) -> KernelSource {
    #[cfg(feature = "cuda")]
    let cuda = Some(normalise_cuda(&cuda(def.clone())));
    #[cfg(not(feature = "cuda"))]
    let cuda = None;
    KernelSource { name, wgsl: normalise_wgsl(&wgsl(def)), cuda }
}

/// Definitions of every kernel of the crate, one representative specialisation each (f32 storage): each
/// op's `kernels` module lists its own (`snapshot()`, with [`kernel_def`]). A new op adds its list here;
/// the snapshot test and the dump pick it up.
pub fn kernels() -> Vec<(&'static str, KernelDefinition)> {
    [
        crate::attention::kernels::snapshot(),
        crate::psa::kernels::snapshot(),
        crate::decode::kernels::snapshot(),
        crate::ciou::kernels::snapshot(),
        crate::conv::kernels::snapshot(),
        crate::bce::kernels::snapshot(),
        crate::bce_onehot::kernels::snapshot(),
        crate::topk::kernels::snapshot(),
        crate::tal::kernels::snapshot(),
        crate::bbox_loss::kernels::snapshot(),
        crate::branch_loss::kernels::snapshot(),
        crate::norm::kernels::snapshot(),
        crate::nhwc::kernels::snapshot(),
    ]
    .concat()
}

/// The runtime the kernels are defined with (any would do: definition launches nothing).
pub(crate) type R = WgpuRuntime;
/// A tensor argument of a kernel definition (in the order of the kernel's signature).
pub(crate) const T: TensorCompilationArg = TensorCompilationArg { inplace: None };
/// A scalar argument of a kernel definition (its value is a launch-time input, not part of the source).
pub(crate) const S: () = ();
/// The f32 storage type (a `#[define(F)]` dtype argument).
pub(crate) const F32: StorageType = StorageType::Scalar(ElemType::Float(FloatKind::F32));
/// The conv kernels' geometry argument: every field a launch-time scalar.
pub(crate) fn conv_geo() -> crate::conv::kernels::gemm::GeoCompilationArg {
    crate::conv::kernels::gemm::GeoCompilationArg {
        b: S,
        h: S,
        w: S,
        ci: S,
        oh: S,
        ow: S,
        co: S,
        kh: S,
        kw: S,
        sh: S,
        sw: S,
        ph: S,
        pw: S,
        dh: S,
        dw: S,
        groups: S,
    }
}
/// The i32 storage type (a `#[define(I)]` dtype argument).
pub(crate) const I32: StorageType = StorageType::Scalar(ElemType::Int(IntKind::I32));

/// `kernel_def!(name, module::kernel_fn::KernelStruct<R>, units = U, [args…])`: `(name, definition)` of one
/// specialisation of a `#[cube(launch_unchecked)]` kernel with `U` units per cube. `args` are the generated
/// `new`'s arguments after the settings and the client, in the kernel signature's order: [`T`] per tensor,
/// [`S`] per runtime scalar, then the comptime values and the dtype(s).
macro_rules! kernel_def {
    ($name:literal, $kernel:ty, units = $units:expr, [$($arg:expr),* $(,)?]) => {
        (
            $name,
            cubecl::prelude::CubeKernel::define(&<$kernel>::new(
                $crate::snapshot::settings($units as usize),
                $crate::snapshot::client(),
                $($arg),*
            )),
        )
    };
}
pub(crate) use kernel_def;

/// Compiled sources of every kernel in [`kernels`].
pub fn all_sources() -> Vec<KernelSource> {
    kernels().into_iter().map(|(name, def)| sources(name, def)).collect()
}

#[cfg(feature = "cuda")]
mod tensor_core;
#[cfg(feature = "cuda")]
pub use tensor_core::{conv_wgrad_cmma_cuda, fa2_forward_cmma_cuda, fa2_mma_cuda};

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "cuda")]
    #[test]
    fn snapshot_fa2_forward_cmma_source() {
        let src = fa2_forward_cmma_cuda();
        assert!(src.contains("mma_sync"), "no tensor-core instruction in the cmma forward");
        if let Ok(dir) = std::env::var("KERNEL_SOURCE_DUMP") {
            std::fs::create_dir_all(&dir).expect("create KERNEL_SOURCE_DUMP dir");
            std::fs::write(std::path::Path::new(&dir).join("fa2_forward_cmma_f16_dk32_dv64.cu"), &src).expect("write");
        }
        insta::assert_snapshot!("fa2_forward_cmma_f16_dk32_dv64.cu", src);
    }

    #[cfg(feature = "cuda")]
    #[test]
    fn snapshot_conv_wgrad_cmma_source() {
        let src = conv_wgrad_cmma_cuda();
        assert!(src.contains("mma_sync"), "no tensor-core instruction in the conv weight gradient");
        if let Ok(dir) = std::env::var("KERNEL_SOURCE_DUMP") {
            std::fs::create_dir_all(&dir).expect("create KERNEL_SOURCE_DUMP dir");
            std::fs::write(std::path::Path::new(&dir).join("conv_wgrad_cmma_f16_64x64.cu"), &src).expect("write");
        }
        insta::assert_snapshot!("conv_wgrad_cmma_f16_64x64.cu", src);
    }

    #[cfg(feature = "cuda")]
    #[test]
    fn snapshot_fa2_mma_sources() {
        for (name, src) in fa2_mma_cuda() {
            assert!(src.contains("__mma_m16n8k16"), "{name}: no mma.sync in the source");
            assert!(src.contains("__ldmatrix"), "{name}: no ldmatrix in the source");
            if let Ok(dir) = std::env::var("KERNEL_SOURCE_DUMP") {
                std::fs::create_dir_all(&dir).expect("create KERNEL_SOURCE_DUMP dir");
                std::fs::write(std::path::Path::new(&dir).join(name), &src).expect("write");
            }
            insta::assert_snapshot!(name, src);
        }
    }

    /// Writes the sources to `$KERNEL_SOURCE_DUMP/<name>.{wgsl,cu}` when that variable is set.
    fn dump(src: &KernelSource) {
        let Ok(dir) = std::env::var("KERNEL_SOURCE_DUMP") else { return };
        let dir = std::path::PathBuf::from(dir);
        std::fs::create_dir_all(&dir).expect("create KERNEL_SOURCE_DUMP dir");
        std::fs::write(dir.join(format!("{}.wgsl", src.name)), &src.wgsl).expect("write wgsl");
        if let Some(cu) = &src.cuda {
            std::fs::write(dir.join(format!("{}.cu", src.name)), cu).expect("write cuda");
        }
    }

    #[test]
    fn snapshot_kernel_sources() {
        for src in all_sources() {
            dump(&src);
            insta::assert_snapshot!(format!("{}.wgsl", src.name), src.wgsl);
            #[cfg(feature = "cuda")]
            insta::assert_snapshot!(format!("{}.cu", src.name), src.cuda.as_deref().unwrap());
        }
    }

    #[test]
    fn snapshot_sources_are_deterministic() {
        // Defining and compiling repeatedly in one process gives identical (normalised) text — the raw CUDA
        // C++ does not: its shared-memory declarations come out in hash-map order. Across processes the
        // snapshot test itself checks it.
        let a = all_sources();
        for b in (0..4).map(|_| all_sources()) {
            assert_eq!(a.len(), b.len());
            for (x, y) in a.iter().zip(&b) {
                assert_eq!(x.wgsl, y.wgsl, "{}: WGSL differs between two compilations", x.name);
                assert_eq!(x.cuda, y.cuda, "{}: CUDA C++ differs between two compilations", x.name);
                assert!(x.wgsl.contains("fn "), "{}: no entry point in the WGSL", x.name);
            }
        }
    }
}
