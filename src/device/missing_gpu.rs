//! Why wgpu reaches no GPU through Vulkan, in the words of what to do about it: the causes
//! users hit are no Vulkan driver installed, a variable pointing the Vulkan loader at nothing,
//! a container started without the NVIDIA runtime's graphics part, and WSL2 without a driver.
//!
//! The checks read files and variables only, through [`System`], so that each cause can be
//! tested on a machine that has none of them.

use std::path::{Path, PathBuf};

/// What the checks may look at.
pub(crate) trait System {
    fn var(&self, name: &str) -> Option<String>;
    fn exists(&self, path: &Path) -> bool;
    /// The `.json` files in a folder (the Vulkan loader's driver manifests).
    fn json_files(&self, dir: &Path) -> Vec<PathBuf>;
    fn read(&self, path: &Path) -> Option<String>;
}

/// This machine.
pub(crate) struct ThisMachine;

impl System for ThisMachine {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok().filter(|v| !v.is_empty())
    }

    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }

    fn json_files(&self, dir: &Path) -> Vec<PathBuf> {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return Vec::new();
        };
        let mut files: Vec<PathBuf> = entries
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
            .collect();
        files.sort();
        files
    }

    fn read(&self, path: &Path) -> Option<String> {
        std::fs::read_to_string(path).ok()
    }
}

/// Where the Vulkan loader looks for driver manifests on Linux, when no variable names them.
const ICD_FOLDERS: [&str; 4] = [
    "/etc/vulkan/icd.d",
    "/usr/local/share/vulkan/icd.d",
    "/usr/share/vulkan/icd.d",
    "/usr/local/etc/vulkan/icd.d",
];

/// Variables that replace the loader's search with a list of manifests.
const ICD_VARIABLES: [&str; 2] = ["VK_DRIVER_FILES", "VK_ICD_FILENAMES"];

/// The device files a GPU's kernel driver makes on Linux: the DRM nodes of every Mesa driver
/// (and of NVIDIA's with nvidia-drm), NVIDIA's own, WSL2's bridge to the Windows driver, and
/// the ARM system-on-chip drivers that bypass DRM.
pub const GPU_DEVICE_FILES: [&str; 7] = [
    "/dev/dri",
    "/dev/nvidiactl",
    "/dev/nvidia0",
    "/dev/dxg",
    "/dev/mali0",
    "/dev/kgsl-3d0",
    "/dev/galcore",
];

/// Whether a GPU could be reached here at all. On Linux a GPU's driver makes a device file
/// ([`GPU_DEVICE_FILES`]); with none of them, every adapter wgpu would find is a software
/// rasterizer, so there is no need to load the graphics drivers to learn it (which takes tens
/// of milliseconds). Elsewhere: true, the drivers are asked.
pub(crate) fn may_reach_a_gpu(system: &dyn System) -> bool {
    !cfg!(target_os = "linux")
        || GPU_DEVICE_FILES
            .iter()
            .any(|file| system.exists(Path::new(file)))
}

/// Sentences saying why Vulkan shows no GPU here and what to try, most specific first; empty
/// where nothing explains it. Only Linux (and WSL2) is diagnosed: elsewhere the GPU maker's
/// driver installer is the whole answer.
pub(crate) fn explain(system: &dyn System) -> Vec<String> {
    if !cfg!(target_os = "linux") {
        return Vec::new();
    }
    let mut reasons = Vec::new();
    // The driver files installed where the loader looks by default.
    let home = system
        .var("HOME")
        .map(|h| Path::new(&h).join(".local/share/vulkan/icd.d"));
    let installed: Vec<PathBuf> = ICD_FOLDERS
        .iter()
        .map(PathBuf::from)
        .chain(home)
        .flat_map(|dir| system.json_files(&dir))
        .collect();
    let is_nvidia = |p: &PathBuf| {
        p.file_name()
            .is_some_and(|n| n.to_string_lossy().to_lowercase().contains("nvidia"))
    };
    if let Some((name, list)) = ICD_VARIABLES
        .iter()
        .find_map(|&name| Some((name, system.var(name)?)))
    {
        let named: Vec<PathBuf> = list
            .split(':')
            .filter(|p| !p.is_empty())
            .map(PathBuf::from)
            .collect();
        let missing: Vec<String> = named
            .iter()
            .filter(|p| !system.exists(p))
            .map(|p| p.display().to_string())
            .collect();
        // An entry may be a folder of driver files.
        let used: Vec<PathBuf> = named
            .iter()
            .flat_map(|p| match system.json_files(p) {
                files if files.is_empty() => vec![p.clone()],
                files => files,
            })
            .collect();
        let left_out: Vec<String> = installed
            .iter()
            .filter(|p| is_nvidia(p) && !used.iter().any(is_nvidia))
            .map(|p| p.display().to_string())
            .collect();
        if !missing.is_empty() || !left_out.is_empty() {
            let mut problem = Vec::new();
            if !missing.is_empty() {
                problem.push(format!("{} does not exist", missing.join(", ")));
            }
            if !left_out.is_empty() {
                problem.push(format!("it leaves out {}", left_out.join(", ")));
            }
            reasons.push(format!(
                "{name}={list} tells the Vulkan loader to use only those driver files, and {}: \
                 unset {name} (or point it at a file in /usr/share/vulkan/icd.d)",
                problem.join(", and ")
            ));
        }
    }

    let nvidia_present = system.exists(Path::new("/dev/nvidia0"))
        || system.exists(Path::new("/proc/driver/nvidia/version"));
    if nvidia_present && !installed.iter().any(is_nvidia) {
        let capabilities = system.var("NVIDIA_DRIVER_CAPABILITIES");
        let in_container = capabilities.is_some()
            || system.var("NVIDIA_VISIBLE_DEVICES").is_some()
            || system.exists(Path::new("/.dockerenv"))
            || system.exists(Path::new("/run/.containerenv"));
        reasons.push(match capabilities {
            Some(caps)
                if !caps
                    .split(',')
                    .any(|c| matches!(c.trim(), "all" | "graphics")) =>
            {
                format!(
                    "an NVIDIA GPU is here, but this container was started with \
                     NVIDIA_DRIVER_CAPABILITIES={caps}, which leaves out the Vulkan driver: \
                     start it with NVIDIA_DRIVER_CAPABILITIES=all (or add graphics)"
                )
            }
            _ if in_container => "an NVIDIA GPU is here, but its Vulkan driver file \
                 (nvidia_icd.json) is not: start the container with the NVIDIA runtime and \
                 NVIDIA_DRIVER_CAPABILITIES=all, or install the driver's Vulkan part \
                 (libnvidia-gl) in the image"
                .to_string(),
            _ => "an NVIDIA GPU is here, but its Vulkan driver file (nvidia_icd.json) is not: \
                  install the NVIDIA driver's Vulkan part (Debian/Ubuntu: the libnvidia-gl \
                  package of your driver version)"
                .to_string(),
        });
    }

    let wsl = system.var("WSL_DISTRO_NAME").is_some()
        || system
            .read(Path::new("/proc/version"))
            .is_some_and(|v| v.to_lowercase().contains("microsoft"));
    if wsl {
        reasons.push(if system.exists(Path::new("/dev/dxg")) {
            "this is WSL2, which reaches the GPU through Mesa's Direct3D 12 Vulkan driver \
             (dozen): install a recent mesa-vulkan-drivers in the distribution"
                .to_string()
        } else {
            "this is WSL2 without GPU access (no /dev/dxg): install the Windows GPU driver \
             (NVIDIA, AMD or Intel, any recent one supports WSL2) and run `wsl --update`"
                .to_string()
        });
    }

    if installed.is_empty() && reasons.is_empty() {
        reasons.push(format!(
            "no Vulkan driver is installed (no driver file in {}): install your GPU's \
             Vulkan driver (NVIDIA's driver; Mesa's mesa-vulkan-drivers for AMD and Intel)",
            ICD_FOLDERS.join(", ")
        ));
    }
    reasons
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// A machine made of the given variables and files.
    #[derive(Default)]
    struct Fake {
        vars: HashMap<&'static str, &'static str>,
        files: HashMap<PathBuf, String>,
    }

    impl Fake {
        fn var(mut self, name: &'static str, value: &'static str) -> Self {
            self.vars.insert(name, value);
            self
        }
        fn file(mut self, path: &str, text: &str) -> Self {
            self.files.insert(PathBuf::from(path), text.to_string());
            self
        }
    }

    impl System for Fake {
        fn var(&self, name: &str) -> Option<String> {
            self.vars.get(name).map(|v| v.to_string())
        }
        fn exists(&self, path: &Path) -> bool {
            self.files.contains_key(path)
        }
        fn json_files(&self, dir: &Path) -> Vec<PathBuf> {
            self.files
                .keys()
                .filter(|p| p.parent() == Some(dir) && p.extension().is_some_and(|e| e == "json"))
                .cloned()
                .collect()
        }
        fn read(&self, path: &Path) -> Option<String> {
            self.files.get(path).cloned()
        }
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn a_gpu_is_reachable_only_through_a_device_file() {
        assert!(!may_reach_a_gpu(&Fake::default()));
        // Vulkan driver files and a container's variables are no GPU by themselves.
        let drivers_only = Fake::default()
            .file("/usr/share/vulkan/icd.d/lvp_icd.x86_64.json", "{}")
            .file("/usr/share/vulkan/icd.d/nvidia_icd.json", "{}")
            .var("NVIDIA_VISIBLE_DEVICES", "all");
        assert!(!may_reach_a_gpu(&drivers_only));
        for file in ["/dev/dri", "/dev/nvidia0", "/dev/nvidiactl", "/dev/dxg"] {
            assert!(may_reach_a_gpu(&Fake::default().file(file, "")), "{file}");
        }
    }

    fn one(system: &Fake) -> String {
        let reasons = explain(system);
        assert_eq!(reasons.len(), 1, "{reasons:?}");
        reasons[0].clone()
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn each_cause_is_named_with_what_to_do() {
        let plain = one(&Fake::default());
        assert!(plain.contains("no Vulkan driver is installed"), "{plain}");

        let pointed = one(&Fake::default()
            .var("VK_ICD_FILENAMES", "/nowhere/icd.json")
            .file("/usr/share/vulkan/icd.d/lvp_icd.x86_64.json", "{}"));
        assert!(
            pointed.contains("VK_ICD_FILENAMES=/nowhere/icd.json"),
            "{pointed}"
        );
        assert!(pointed.contains("unset VK_ICD_FILENAMES"), "{pointed}");

        let container = one(&Fake::default()
            .file("/dev/nvidia0", "")
            .var("NVIDIA_DRIVER_CAPABILITIES", "compute,utility"));
        assert!(
            container.contains("NVIDIA_DRIVER_CAPABILITIES=compute,utility"),
            "{container}"
        );
        assert!(
            container.contains("NVIDIA_DRIVER_CAPABILITIES=all"),
            "{container}"
        );

        let no_manifest = one(&Fake::default()
            .file("/dev/nvidia0", "")
            .file("/.dockerenv", ""));
        assert!(no_manifest.contains("nvidia_icd.json"), "{no_manifest}");

        let wsl = one(&Fake::default().file(
            "/proc/version",
            "Linux version 5.15.153.1-microsoft-standard-WSL2",
        ));
        assert!(wsl.contains("WSL2 without GPU access"), "{wsl}");

        // The variable leaving out an NVIDIA driver that is installed: one reason, not two.
        let hidden = one(&Fake::default()
            .file("/dev/nvidia0", "")
            .file("/usr/share/vulkan/icd.d/nvidia_icd.json", "{}")
            .file("/usr/share/vulkan/icd.d/lvp_icd.x86_64.json", "{}")
            .var(
                "VK_ICD_FILENAMES",
                "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json",
            ));
        assert!(
            hidden.contains("it leaves out /usr/share/vulkan/icd.d/nvidia_icd.json"),
            "{hidden}"
        );

        // A working NVIDIA install has nothing to explain.
        let fine = Fake::default()
            .file("/dev/nvidia0", "")
            .file("/usr/share/vulkan/icd.d/nvidia_icd.json", "{}");
        assert!(explain(&fine).is_empty());
    }
}
