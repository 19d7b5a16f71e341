//! `plot_batch`: a decodable grid of the expected size with box pixels where expected.
use yolo26_augment::*;

fn sample(i: u32) -> Sample {
    let img = RgbImage::from_fn(64, 48, |x, y| image::Rgb([(x * 3 + i * 20) as u8, (y * 4) as u8, 128]));
    Sample { img, boxes: vec![[10.0, 20.0, 40.0, 40.0]], cls: vec![i] }
}

#[test]
fn plot_batch_writes_labelled_grid() {
    let samples: Vec<Sample> = (0..5).map(sample).collect();
    let names: Vec<String> = ["person", "car", "dog", "cat", "bus"].map(String::from).to_vec();
    let dir = std::env::temp_dir().join(format!("yolo26-augment-plot-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let png = dir.join("train_batch0.png");
    plot_batch(&samples, &names, &png).unwrap();
    let img = image::open(&png).unwrap().to_rgb8();
    // 5 images -> ns = 3, grid 3 x 3 tiles of 64 x 48
    assert_eq!(img.dimensions(), (3 * 64, 3 * 48));
    let (_, layout) = render_batch(&samples, &names).unwrap();
    assert_eq!((layout.ns, layout.tile, layout.line_width), (3, [48, 64], 2));
    // column-major: sample 1 sits below sample 0 (x = 0, y = 48); its box's bottom-right corner is class 1's colour
    assert_eq!(img.get_pixel(40, 48 + 40).0, COLORS[1]);
    assert_eq!(img.get_pixel(40, 40).0, COLORS[0]);
    // sample 3 is in the second column (x = 64, y = 0)
    assert_eq!(img.get_pixel(64 + 40, 40).0, COLORS[3]);
    // empty tiles stay white, inside a box the image is untouched
    assert_eq!(img.get_pixel(2 * 64 + 30, 2 * 48 + 30).0, [255; 3]);
    assert_eq!(img.get_pixel(25, 35).0, samples[0].img.get_pixel(25, 35).0);
    // JPEG by extension, no temporary file left behind
    let jpg = dir.join("train_batch1.jpg");
    plot_batch(&samples, &names, &jpg).unwrap();
    assert_eq!(image::open(&jpg).unwrap().to_rgb8().dimensions(), (192, 144));
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().filter_map(|e| e.ok()).collect();
    assert_eq!(left.len(), 2, "only the two plots");
    assert!(plot_batch(&samples, &names, dir.join("x.bmp")).is_err());
    assert!(plot_batch(&[], &names, &png).is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn plot_batch_downscales_large_grids() {
    let big: Vec<Sample> = (0..16)
        .map(|i| Sample {
            img: RgbImage::from_pixel(640, 640, image::Rgb([i as u8 * 10, 50, 50])),
            boxes: vec![[100.0, 100.0, 300.0, 300.0]],
            cls: vec![i],
        })
        .collect();
    let (img, layout) = render_batch(&big, &[]).unwrap();
    // scale = 1920 / 4 / 640 = 0.75 -> tiles of 480, fs = int(960 * 4 * 0.01) = 38, line width 4
    assert_eq!(img.dimensions(), (1920, 1920));
    assert_eq!((layout.tile, layout.line_width), ([480, 480], 4));
    assert_eq!(img.get_pixel(225, 200).0, COLORS[0], "right edge of the scaled box 300 * 0.75 = 225");
}
