"""Bundled demo data (a public-domain master sample) and a local pirate-style website."""

from tracker.demo.site import (
    LocalSite,
    SiteManifest,
    build_site,
    master_documents,
    master_paths,
    serve,
)

__all__ = ["LocalSite", "SiteManifest", "build_site", "master_documents", "master_paths", "serve"]
