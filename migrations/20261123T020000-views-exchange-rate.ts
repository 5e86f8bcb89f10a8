/** report_sales_order_lines' exchange-rate direction (A37): derived from the catalog by src/loaders/derived/ after the migrations. */
export function up(): Promise<void> {
  return Promise.resolve();
}
