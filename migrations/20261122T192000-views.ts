/** The views: derived from the catalog by src/loaders/derived/ after the migrations. */
export function up(): Promise<void> {
  return Promise.resolve();
}
