from authsvc import create_app

app = create_app()
