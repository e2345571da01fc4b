package dev.jdist.bench;

import javax.imageio.ImageIO;
import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.ToDoubleFunction;

/**
 * Draws bus bandwidth and latency against message size, one series per op and mode, as PNG or SVG
 * (chosen by the file name). The same drawing code serves both through {@link Canvas}.
 */
public final class BenchPlot {
    private static final int WIDTH = 1200, HEIGHT = 500, PANEL_W = 470, PANEL_H = 330, TOP = 60, LEFT = 80, GAP = 100;
    private static final Color[] PALETTE = {
        new Color(0x1f77b4), new Color(0xd62728), new Color(0x2ca02c), new Color(0xff7f0e),
        new Color(0x9467bd), new Color(0x8c564b), new Color(0xe377c2), new Color(0x17becf)};

    private BenchPlot() {}

    /** Writes the plot to {@code file}: {@code .svg} gives SVG, anything else PNG. */
    public static void write(List<BenchResult> results, String title, Path file) throws IOException {
        if (results.isEmpty()) throw new IllegalArgumentException("nothing to plot: the benchmark produced no rows");
        boolean svg = file.getFileName().toString().toLowerCase(Locale.ROOT).endsWith(".svg");
        if (svg) {
            SvgCanvas c = new SvgCanvas();
            draw(c, results, title);
            Files.writeString(file, c.finish());
        } else {
            BufferedImage img = new BufferedImage(WIDTH, HEIGHT, BufferedImage.TYPE_INT_RGB);
            Graphics2D g = img.createGraphics();
            g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
            g.setRenderingHint(RenderingHints.KEY_TEXT_ANTIALIASING, RenderingHints.VALUE_TEXT_ANTIALIAS_ON);
            draw(new Graphics2DCanvas(g), results, title);
            g.dispose();
            if (!ImageIO.write(img, "png", file.toFile())) throw new IOException("no PNG writer available");
        }
    }

    private static void draw(Canvas c, List<BenchResult> results, String title) {
        c.rect(0, 0, WIDTH, HEIGHT, Color.WHITE);
        c.text(WIDTH / 2.0, 28, title, Color.BLACK, 16, "middle");
        Map<String, List<BenchResult>> series = new LinkedHashMap<>();
        for (BenchResult r : results) series.computeIfAbsent(r.op() + " " + r.mode(), k -> new ArrayList<>()).add(r);
        panel(c, LEFT, series, "bus bandwidth (GB/s)", BenchResult::busbwGBs, false);
        panel(c, LEFT + PANEL_W + GAP, series, "median latency (µs, log scale)", BenchResult::medianMicros, true);
        int i = 0;
        for (String name : series.keySet()) {
            // four entries a row, below the panels' axis titles (12 series = 3 rows)
            double x = LEFT + (i % 4) * 260;
            double y = TOP + PANEL_H + 62 + (i / 4) * 18;
            Color col = PALETTE[i % PALETTE.length];
            c.line(x, y - 4, x + 24, y - 4, col, 2.5);
            c.text(x + 30, y, name, Color.BLACK, 12, "start");
            i++;
        }
    }

    private static void panel(Canvas c, double x0, Map<String, List<BenchResult>> series, String yLabel,
                              ToDoubleFunction<BenchResult> y, boolean logY) {
        double minX = Double.MAX_VALUE, maxX = 0, minY = Double.MAX_VALUE, maxY = 0;
        for (List<BenchResult> s : series.values()) {
            for (BenchResult r : s) {
                minX = Math.min(minX, log2(r.bytes()));
                maxX = Math.max(maxX, log2(r.bytes()));
                double v = y.applyAsDouble(r);
                if (logY && v <= 0) continue;
                minY = Math.min(minY, logY ? Math.log10(v) : v);
                maxY = Math.max(maxY, logY ? Math.log10(v) : v);
            }
        }
        if (maxX == minX) { minX -= 1; maxX += 1; }
        if (logY) { minY = Math.floor(minY); maxY = Math.max(Math.ceil(maxY), minY + 1); } else { minY = 0; maxY = niceCeil(maxY); }
        double top = TOP, bottom = TOP + PANEL_H;
        c.line(x0, bottom, x0 + PANEL_W, bottom, Color.BLACK, 1);
        c.line(x0, top, x0, bottom, Color.BLACK, 1);
        c.text(x0 + PANEL_W / 2.0, bottom + 42, "message size", Color.BLACK, 12, "middle");
        c.text(x0, top - 10, yLabel, Color.BLACK, 12, "start");
        // x ticks every power of 4, labelled with binary units
        for (int e = (int) Math.ceil(minX); e <= maxX; e++) {
            if (e % 2 != 0 && maxX - minX > 12) continue;
            double px = x0 + (e - minX) / (maxX - minX) * PANEL_W;
            c.line(px, bottom, px, bottom + 5, Color.BLACK, 1);
            c.line(px, top, px, bottom, new Color(0xeeeeee), 1);
            c.text(px, bottom + 20, SizeSweep.format(1L << e), Color.DARK_GRAY, 10, "middle");
        }
        int yTicks = logY ? (int) (maxY - minY) : 5;
        for (int t = 0; t <= yTicks; t++) {
            double v = minY + (maxY - minY) * t / yTicks;
            double py = bottom - (v - minY) / (maxY - minY) * PANEL_H;
            c.line(x0 - 5, py, x0, py, Color.BLACK, 1);
            if (t > 0) c.line(x0, py, x0 + PANEL_W, py, new Color(0xeeeeee), 1);
            String label = logY ? formatNumber(Math.pow(10, v)) : formatNumber(v);
            c.text(x0 - 8, py + 4, label, Color.DARK_GRAY, 10, "end");
        }
        int i = 0;
        for (List<BenchResult> s : series.values()) {
            Color col = PALETTE[i++ % PALETTE.length];
            double px0 = Double.NaN, py0 = Double.NaN;
            for (BenchResult r : s) {
                double v = y.applyAsDouble(r);
                if (logY && v <= 0) continue;
                double px = x0 + (log2(r.bytes()) - minX) / (maxX - minX) * PANEL_W;
                double py = bottom - ((logY ? Math.log10(v) : v) - minY) / (maxY - minY) * PANEL_H;
                if (!Double.isNaN(px0)) c.line(px0, py0, px, py, col, 2);
                c.dot(px, py, col);
                px0 = px;
                py0 = py;
            }
        }
    }

    private static double log2(long v) { return Math.log(v) / Math.log(2); }

    private static double niceCeil(double v) {
        if (v <= 0) return 1;
        double p = Math.pow(10, Math.floor(Math.log10(v)));
        for (double m : new double[] {1, 2, 2.5, 5, 10}) if (m * p >= v) return m * p;
        return 10 * p;
    }

    private static String formatNumber(double v) {
        if (v >= 100 || v == Math.rint(v)) return String.format(Locale.ROOT, "%.0f", v);
        if (v >= 1) return String.format(Locale.ROOT, "%.1f", v);
        return String.format(Locale.ROOT, "%.2g", v);
    }

    /** The few drawing primitives the plot needs. */
    interface Canvas {
        void rect(double x, double y, double w, double h, Color fill);
        void line(double x1, double y1, double x2, double y2, Color color, double width);
        void dot(double x, double y, Color color);
        void text(double x, double y, String s, Color color, int size, String anchor);
    }

    private record Graphics2DCanvas(Graphics2D g) implements Canvas {
        public void rect(double x, double y, double w, double h, Color fill) {
            g.setColor(fill);
            g.fillRect((int) x, (int) y, (int) w, (int) h);
        }
        public void line(double x1, double y1, double x2, double y2, Color color, double width) {
            g.setColor(color);
            g.setStroke(new BasicStroke((float) width));
            g.drawLine((int) Math.round(x1), (int) Math.round(y1), (int) Math.round(x2), (int) Math.round(y2));
        }
        public void dot(double x, double y, Color color) {
            g.setColor(color);
            g.fillOval((int) Math.round(x) - 3, (int) Math.round(y) - 3, 7, 7);
        }
        public void text(double x, double y, String s, Color color, int size, String anchor) {
            g.setColor(color);
            g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, size));
            int w = g.getFontMetrics().stringWidth(s);
            double dx = switch (anchor) { case "middle" -> -w / 2.0; case "end" -> -w; default -> 0; };
            g.drawString(s, (float) (x + dx), (float) y);
        }
    }

    private static final class SvgCanvas implements Canvas {
        private final StringBuilder sb = new StringBuilder(String.format(Locale.ROOT,
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\">%n", WIDTH, HEIGHT));
        public void rect(double x, double y, double w, double h, Color fill) {
            sb.append(String.format(Locale.ROOT, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>%n", x, y, w, h, hex(fill)));
        }
        public void line(double x1, double y1, double x2, double y2, Color color, double width) {
            sb.append(String.format(Locale.ROOT, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"%.1f\"/>%n",
                    x1, y1, x2, y2, hex(color), width));
        }
        public void dot(double x, double y, Color color) {
            sb.append(String.format(Locale.ROOT, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"/>%n", x, y, hex(color)));
        }
        public void text(double x, double y, String s, Color color, int size, String anchor) {
            sb.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%d\" fill=\"%s\" text-anchor=\"%s\">%s</text>%n",
                    x, y, size, hex(color), anchor, s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")));
        }
        String finish() { return sb.append("</svg>\n").toString(); }
        private static String hex(Color c) { return String.format("#%06x", c.getRGB() & 0xffffff); }
    }
}
