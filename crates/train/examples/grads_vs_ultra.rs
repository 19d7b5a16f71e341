//! Dev check: our loss and parameter gradients (Flex) for an ultralytics checkpoint on the first training batch,
//! against PyTorch's (`/tmp/ugrads.safetensors`, written by a script that runs ultralytics on the same batch).
//! Args: WEIGHTS.pt DATA.yaml IMGSZ BATCH EPOCHS CLOSE_MOSAIC UGRADS
use std::collections::HashMap;
use std::sync::Arc;

use burn::backend::{Autodiff, Flex};
use burn::module::AutodiffModule;
use yolo26_data::{DataSource, Split, TrainLoader, TrainLoaderConfig};
use yolo26_model::load::load_weights;
use yolo26_model::postprocess::Anchors;
use yolo26_model::weights::read_weights;
use yolo26_model::{Yolo26, Yolo26Config};
use yolo26_train::loss::{E2ELoss, LossGains};
use yolo26_train::params::set_trainable;
use yolo26_train::step::{batch_targets, f32_outputs, images_tensor};

type AB = Autodiff<Flex>;

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let (imgsz, bs, epochs, close) =
        (a[3].parse().unwrap(), a[4].parse().unwrap(), a[5].parse().unwrap(), a[6].parse().unwrap());
    let ds = Arc::new(DataSource::parse(&a[2], None).unwrap().open(Split::Train).unwrap());
    let nc = 3;
    let cfg =
        TrainLoaderConfig { batch_size: bs, imgsz, workers: 2, epochs, close_mosaic: close, ..Default::default() };
    let batch = TrainLoader::new(ds, cfg).unwrap().epoch(0).unwrap().next().unwrap().unwrap();
    let dev = Default::default();
    let map = read_weights(std::path::Path::new(&a[1])).unwrap();
    let inner: Yolo26<Flex> = load_weights(Yolo26Config::new(yolo26_model::Scale::N, nc).init(&dev), &map).unwrap();
    let model: Yolo26<AB> = set_trainable(<Yolo26<AB> as AutodiffModule<AB>>::from_inner(inner));
    let mut loss = E2ELoss::new(nc, epochs, LossGains::default());
    loss.set_epoch(0);
    let images = images_tensor::<AB>(&batch.images, batch.shape, &dev);
    let gt = batch_targets::<AB>(&batch, &dev);
    let feats = model.forward_features(images);
    let shapes = yolo26_model::nn::head::feature_shapes(&feats);
    let o2m = f32_outputs(model.layer23.forward_one2many(&feats));
    let detached: Vec<_> = feats.iter().map(|f| f.clone().detach()).collect();
    let o2o = f32_outputs(model.layer23.forward_one2one(&detached));
    let out = loss.forward(&o2m, &o2o, &Anchors::<AB>::new(&shapes, &dev), &gt);
    let items: Vec<f32> = out.one2one.items.clone().into_data().to_vec().unwrap();
    let total: f32 = out.total.clone().into_scalar();
    println!("ours items (o2o) {items:?} total {total}");
    let grads = out.total.backward();
    let mut gp = burn::optim::GradientsParams::from_grads(grads, &model);
    let mut ours: HashMap<String, Vec<f32>> = HashMap::new();
    for info in yolo26_train::params::tensor_infos(&model) {
        let v = match info.shape.len() {
            1 => gp.remove::<Flex, 1>(info.id).map(|t| t.into_data()),
            2 => gp.remove::<Flex, 2>(info.id).map(|t| t.into_data()),
            4 => gp.remove::<Flex, 4>(info.id).map(|t| t.into_data()),
            _ => None,
        };
        if let Some(d) = v {
            ours.insert(info.name.clone(), d.to_vec::<f32>().unwrap());
        }
    }
    let bytes = std::fs::read(&a[7]).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let mut rows = Vec::new();
    for (name, t) in st.tensors() {
        let u: Vec<f32> = t.data().chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
        let Some(o) = ours.get(&name) else {
            println!("{name}: not in ours");
            continue;
        };
        if o.len() != u.len() {
            println!("{name}: {} vs {} elements", o.len(), u.len());
            continue;
        }
        let nu = u.iter().map(|&x| (x as f64).powi(2)).sum::<f64>().sqrt();
        let no = o.iter().map(|&x| (x as f64).powi(2)).sum::<f64>().sqrt();
        let d = u.iter().zip(o).map(|(&x, &y)| ((x - y) as f64).powi(2)).sum::<f64>().sqrt();
        let dot = u.iter().zip(o).map(|(&x, &y)| x as f64 * y as f64).sum::<f64>();
        rows.push((d / nu.max(1e-30), name.to_string(), nu, no, dot / (nu * no).max(1e-30)));
    }
    rows.sort_by(|a, b| b.0.partial_cmp(&a.0).unwrap());
    println!("{} compared (ours {}); worst relative L2 differences:", rows.len(), ours.len());
    for r in rows.iter().take(60) {
        println!("{:.3e}  {:45} |g| torch {:.3e} ours {:.3e} cos {:+.5}", r.0, r.1, r.2, r.3, r.4);
    }
}
