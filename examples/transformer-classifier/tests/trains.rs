//! CI check that the example still trains: a tiny configuration for 2 epochs on `Autodiff<Flex>` must lower the
//! training loss and beat chance (50 %) on the validation set by a clear margin.

use burn::backend::{flex::FlexDevice, Autodiff, Flex};
use transformer_classifier::{default_model, train, TrainConfig};

#[test]
fn trains_on_flex_above_chance() {
    let seq_len = 8;
    let config = TrainConfig::new(default_model(seq_len), seq_len)
        .with_epochs(2)
        .with_batch_size(32)
        .with_train_size(2048)
        .with_valid_size(512);
    let out = std::env::temp_dir().join(format!("transformer-classifier-test-{}", std::process::id()));
    let report = train::<Autodiff<Flex>>(&config, FlexDevice, out.clone(), true);
    let _ = std::fs::remove_dir_all(&out);

    assert_eq!(report.epochs.len(), 2, "one renderer record per epoch: {:?}", report.epochs);
    let (first, last) = (&report.epochs[0], &report.epochs[1]);
    assert!(
        last.train_loss < first.train_loss,
        "training loss did not decrease: epoch 1 {:.4}, epoch 2 {:.4}",
        first.train_loss,
        last.train_loss
    );
    assert!(
        report.final_valid_accuracy > 75.0,
        "validation accuracy {:.1}% is not clearly above chance (50%)",
        report.final_valid_accuracy
    );
    assert!(
        (report.final_valid_accuracy - last.valid_accuracy).abs() < 0.01,
        "recomputed accuracy {:.3}% differs from burn-train's Accuracy metric {:.3}%",
        report.final_valid_accuracy,
        last.valid_accuracy
    );
}
