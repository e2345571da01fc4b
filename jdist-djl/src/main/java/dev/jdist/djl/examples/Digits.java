package dev.jdist.djl.examples;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.zip.GZIPInputStream;

/**
 * The UCI handwritten digits as scikit-learn ships them ({@code sklearn/datasets/data/digits.csv.gz}): 1,797 rows
 * of 64 pixel values 0..16 (an 8×8 image) and the digit. Pixels are scaled to [0, 1]. {@link #split} cuts it into
 * train and test rows by a seeded shuffle, the same on every rank.
 */
public record Digits(float[] pixels, float[] labels, int rows) {
    public static final int FEATURES = 64, CLASSES = 10, ROWS = 1797;
    /** Where Debian's python3-sklearn installs the file. */
    public static final Path DEBIAN = Path.of("/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz");
    /** Where scripts/fetch-digits.sh puts it (taken from the Debian package, no dependency installed). */
    public static final Path CACHE = Path.of("/var/cache/jdist/digits.csv.gz");
    /** The variable that names another copy. */
    public static final String VARIABLE = "JDIST_DIGITS";

    /** The first of {@code $JDIST_DIGITS}, {@link #DEBIAN}, {@link #CACHE} that exists. */
    public static Optional<Path> locate() {
        String env = System.getenv(VARIABLE);
        List<Path> candidates = new ArrayList<>();
        if (env != null && !env.isBlank()) candidates.add(Path.of(env));
        candidates.add(DEBIAN);
        candidates.add(CACHE);
        return candidates.stream().filter(Files::isRegularFile).findFirst();
    }

    /** Reads the gzipped CSV (65 numbers a row, the label last). */
    public static Digits read(Path file) throws IOException {
        float[] x = new float[ROWS * FEATURES];
        float[] y = new float[ROWS];
        int row = 0;
        try (BufferedReader in = new BufferedReader(new InputStreamReader(new GZIPInputStream(Files.newInputStream(file)),
                StandardCharsets.US_ASCII))) {
            for (String line; (line = in.readLine()) != null; ) {
                if (line.isBlank()) continue;
                String[] f = line.split(",");
                if (f.length != FEATURES + 1 || row >= ROWS) {
                    throw new IOException(file + ": line " + (row + 1) + " has " + f.length + " fields (expected "
                            + (FEATURES + 1) + ") or the file has more than " + ROWS + " rows: is this sklearn's digits.csv.gz?");
                }
                for (int j = 0; j < FEATURES; j++) x[row * FEATURES + j] = (float) (Double.parseDouble(f[j]) / 16.0);
                y[row] = (float) Double.parseDouble(f[FEATURES]);
                row++;
            }
        }
        if (row != ROWS) throw new IOException(file + " has " + row + " rows, expected " + ROWS);
        return new Digits(x, y, ROWS);
    }

    /** Rows {@code 0..testRows-1} of a shuffle by {@code new Random(seed)} are the test set, the rest the training set. */
    public List<Digits> split(int testRows, long seed) {
        List<Integer> order = new ArrayList<>();
        for (int i = 0; i < rows; i++) order.add(i);
        Collections.shuffle(order, new Random(seed));
        return List.of(take(order.subList(testRows, rows)), take(order.subList(0, testRows)));
    }

    private Digits take(List<Integer> which) {
        float[] x = new float[which.size() * FEATURES];
        float[] y = new float[which.size()];
        for (int i = 0; i < which.size(); i++) {
            System.arraycopy(pixels, which.get(i) * FEATURES, x, i * FEATURES, FEATURES);
            y[i] = labels[which.get(i)];
        }
        return new Digits(x, y, which.size());
    }
}
